// nn::InferenceOps' CUDA factory in a build without CUDA.
#include "common/inference_ops_detail.hpp"

#include <stdexcept>

namespace nn::detail {

std::unique_ptr<InferenceOps> make_cuda_inference_ops(void*, InferenceOpsOptions const&) {
  throw std::runtime_error(
      "nn::make_inference_ops: this program was built without CUDA (no nvcc when it was "
      "configured), so there are no CUDA inference ops");
}

}  // namespace nn::detail
