// The CUDA backend's factory in a build without CUDA (no nvcc or no cuDNN at configure time).
#include "common/cuda_backend.hpp"

#include <stdexcept>

namespace nn {

bool cuda_backend_built() noexcept { return false; }

bool cuda_available(std::string* why) {
  if (why != nullptr) {
    *why =
        "this program was built without the CUDA backend (nvcc or cuDNN was not found when it "
        "was configured)";
  }
  return false;
}

std::unique_ptr<Backend> make_cuda_backend(CudaBackendOptions const&) {
  std::string why;
  cuda_available(&why);
  throw std::runtime_error(why);
}

}  // namespace nn
