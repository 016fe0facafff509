// The CUDA backend: cuDNN convolutions (NCHW and NHWC), cuBLAS GEMMs and this example's own
// kernels (cuda_kernels.cu), all queued on one non-blocking compute stream. This header needs no
// CUDA header: programs built without CUDA get a stub whose factory says why it is missing.
#pragma once

#include "common/backend.hpp"

#include <cstddef>
#include <memory>
#include <string>

namespace nn {

struct CudaBackendOptions {
  /// CUDA device ordinal.
  int device{0};
  /// Allow TF32 tensor-core math in cuDNN convolutions and cuBLAS GEMMs (the speed mode, ~1e-3
  /// relative error). false: FP32 FMA math only, and deterministic algorithms (for comparing
  /// with the CPU backend).
  bool tf32{true};
  /// Choose convolution algorithms by timing them (cudnnFind*, once per shape, in the first
  /// steps), like torch.backends.cudnn.benchmark; false (default): cuDNN's heuristics
  /// (cudnnGet*_v7), the same choice in every run.
  bool benchmark{false};
  /// Largest cuDNN workspace an algorithm may use.
  std::size_t workspace_limit{std::size_t{512} << 20};
};

/// True when this program was built with the CUDA backend (nvcc and cuDNN found).
bool cuda_backend_built() noexcept;

/// True when the CUDA backend can run here: built in, and a CUDA device is usable. Otherwise
/// false, and `why` (if given) says what is missing (e.g. "cudaGetDeviceCount returned
/// cudaErrorInsufficientDriver: CUDA driver version is insufficient ...").
bool cuda_available(std::string* why = nullptr);

/// A CUDA backend on `options.device`.
/// @throws std::runtime_error naming the failing CUDA/cuDNN/cuBLAS call when it cannot start.
std::unique_ptr<Backend> make_cuda_backend(CudaBackendOptions const& options = {});

}  // namespace nn
