// Operations for inference-time transformer and CNN layers that nn::Backend does not have:
// fused bias + residual + activation epilogues, layer norm, row softmax, attention's head
// split/merge and strided batched GEMMs, repeated (positional) additions, and max pooling.
// Written for the DETR example (examples/detr_inference); any example can use them.
//
// An InferenceOps object works next to a Backend of the same device (make_inference_ops) and on
// the same tensors: float tensors of the backend's float_type(), matrices read row-major as
// rows() x cols() (see tensor.hpp). The CUDA implementation queues every operation on the
// backend's compute stream (stream_handle()), so ops of both objects run in program order.
// Shapes are checked; a mismatch throws std::invalid_argument naming the op and the shapes.
#pragma once

#include "common/backend.hpp"
#include "common/tensor.hpp"

#include <memory>

namespace nn {

/// The function an epilogue applies.
enum class Activation { none, relu, sigmoid };

/// "none" / "relu" / "sigmoid".
char const* to_string(Activation act) noexcept;

/// max_pool2d's window: kernel x kernel, with stride and implicit -infinity padding.
struct PoolGeometry {
  int kernel{3};
  int stride{2};
  int pad{1};
};

class InferenceOps {
 public:
  virtual ~InferenceOps() = default;
  InferenceOps() = default;
  InferenceOps(InferenceOps const&) = delete;
  InferenceOps& operator=(InferenceOps const&) = delete;

  /// In place, y[i, j] = act(y[i, j] + bias[j] (+ residual[i, j])) with y read as pixels x
  /// channels: the epilogue of a GEMM (a matrix [rows, cols, 1, 1]) or of a channels-last
  /// convolution (NHWC [n, c, h, w]; an NCHW feature map is rejected). bias has c elements;
  /// `residual` (may be null) has y's shape and layout.
  virtual void bias_act(Tensor& y, Tensor const& bias, Tensor const* residual, Activation act) = 0;

  /// y = a + b with b repeated over a's rows: y[i, j] = a[i, j] + b[i mod b.rows(), j]
  /// (a positional-encoding table [S, D] added to every image of an [N*S, D] token matrix).
  /// a.rows() must be a multiple of b.rows(), and the columns equal.
  virtual void add_repeat(Tensor const& a, Tensor const& b, Tensor& y) = 0;

  /// y = LayerNorm(x (+ residual)) over each row, times gamma, plus beta ([cols] each).
  /// Statistics in fp32 at least (fp64 in the CPU fp64 backend), biased variance.
  virtual void layer_norm(Tensor const& x, Tensor const* residual, Tensor const& gamma,
                          Tensor const& beta, double eps, Tensor& y) = 0;

  /// y = softmax over each row of x (max-subtracted, so large inputs do not overflow).
  /// y may be x itself.
  virtual void softmax_rows(Tensor const& x, Tensor& y) = 0;

  /// Tokens [batch * seq, heads * head_dim] -> per-head matrices [batch * heads * seq, head_dim]:
  /// entry (b * heads + h) holds head h of image b.
  virtual void split_heads(Tensor const& x, int batch, int heads, Tensor& y) = 0;
  /// The inverse of split_heads.
  virtual void merge_heads(Tensor const& x, int batch, int heads, Tensor& y) = 0;

  /// For each of `batch` entries: c[e] = alpha * op(a[e]) op(b[e]) + beta * c[e], where op(a[e])
  /// is m x k and op(b[e]) is k x n, each entry's matrices stored contiguously one after the
  /// other (a holds batch * m * k elements, row-major, transposed when ta). The GPU runs one
  /// cublasGemmStridedBatchedEx with fp32 accumulation.
  virtual void batched_gemm(bool ta, bool tb, int batch, int m, int n, int k, double alpha,
                            Tensor const& a, Tensor const& b, double beta, Tensor& c) = 0;

  /// Max pooling of a 4-D tensor in its layout (NCHW or NHWC); y has x's layout.
  virtual void max_pool2d(Tensor const& x, PoolGeometry g, Tensor& y) = 0;
};

/// Options of the CUDA implementation.
struct InferenceOpsOptions {
  /// Allow TF32 tensor-core math in the batched GEMMs (match CudaBackendOptions::tf32).
  bool tf32{false};
};

/// The InferenceOps for `backend`'s device (CPU: f32 or f64 loops; CUDA: own kernels and cuBLAS
/// on backend.stream_handle()). `backend` must outlive the result.
/// @throws std::runtime_error when the CUDA implementation is not built in or cannot start.
std::unique_ptr<InferenceOps> make_inference_ops(Backend& backend,
                                                 InferenceOpsOptions const& options = {});

/// Output shape of max_pool2d for x.
/// @throws std::invalid_argument for a bad window or an input smaller than the window.
Shape pool_output_shape(Shape const& x, PoolGeometry g);

}  // namespace nn
