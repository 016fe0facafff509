// Argument checks shared by the CPU and CUDA implementations of nn::InferenceOps, so both reject
// the same calls with the same messages (std::invalid_argument).
#pragma once

#include "common/inference_ops.hpp"

#include <memory>

namespace nn::detail {

/// The CPU implementation (f32 or f64, as `backend`'s float_type()); inference_ops_cpu.cpp.
std::unique_ptr<InferenceOps> make_cpu_inference_ops(Backend& backend);

/// The CUDA implementation on `stream` (a cudaStream_t): inference_ops_cuda.cu, or
/// inference_ops_cuda_stub.cpp (which throws) where the example is built without CUDA.
std::unique_ptr<InferenceOps> make_cuda_inference_ops(void* stream,
                                                      InferenceOpsOptions const& options);

/// Throws unless `t` is a defined float tensor of `dtype`.
void check_float(char const* op, char const* what, Tensor const& t, DType dtype);

void check_bias_act(Tensor const& y, Tensor const& bias, Tensor const* residual);
void check_add_repeat(Tensor const& a, Tensor const& b, Tensor const& y);
void check_layer_norm(Tensor const& x, Tensor const* residual, Tensor const& gamma,
                      Tensor const& beta, double eps, Tensor const& y);
void check_softmax_rows(Tensor const& x, Tensor const& y);
/// split (true) or merge (false): x and y as documented for split_heads / merge_heads.
void check_heads(bool split, Tensor const& x, int batch, int heads, Tensor const& y);
void check_batched_gemm(bool ta, bool tb, int batch, int m, int n, int k, Tensor const& a,
                        Tensor const& b, Tensor const& c);
void check_max_pool2d(Tensor const& x, PoolGeometry g, Tensor const& y);

}  // namespace nn::detail
