// make_graph_forward in a build without the CUDA backend.
#include "graph_forward.hpp"

#include <stdexcept>

namespace detr {

std::unique_ptr<GraphForward> make_graph_forward(nn::Backend&, nn::InferenceOps&, Detr&) {
  throw std::runtime_error("detr_inference was built without CUDA: no CUDA graphs");
}

}  // namespace detr
