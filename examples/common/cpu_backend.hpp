// The CPU backend: plain C++ loops (convolutions through im2col and a dot-product GEMM),
// single-threaded, both layouts. In f32 it is the reference the CUDA backend is tested against;
// in f64 it is the backend of the finite-difference gradient check.
#pragma once

#include "common/backend.hpp"

#include <memory>

namespace nn {

/// A CPU backend whose float tensors are `float_type` (DType::f32 or DType::f64).
/// @throws std::invalid_argument for DType::i32.
std::unique_ptr<Backend> make_cpu_backend(DType float_type = DType::f32);

}  // namespace nn
