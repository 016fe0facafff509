// run_cuda_loop in a build without the CUDA backend.
#include "driver.hpp"

#include <stdexcept>

namespace detr {

std::string run_cuda_loop(nn::Backend&, ImageCache const&, LoopSpec, LoopBody const&) {
  throw std::runtime_error("detr_inference was built without CUDA: no GPU loop");
}

}  // namespace detr
