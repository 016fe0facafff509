// The operations a model needs, implemented once per device. Model code (nn.hpp and the
// examples' networks) only calls these, so the same module classes train on the CPU and on a
// GPU; only the kernels differ.
//
// Conventions:
// - Every op takes tensors of this backend's device. Float tensors have the backend's
//   float_type() (f32; the CPU backend also exists in f64 for gradient checks).
// - GPU backends run ops asynchronously, in order, on one compute stream; read() and
//   synchronize() wait. Ops never allocate on the hot path beyond a workspace that grows once.
// - Outputs are overwritten (never accumulated) unless an op says otherwise, and must be
//   allocated by the caller with the documented shape; a wrong shape throws std::invalid_argument.
// - Matrices are row-major views: a tensor of shape [n, c, h, w] is n rows of c*h*w columns.
#pragma once

#include "common/tensor.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace nn {

/// Stride and zero padding of a 2-D convolution (the kernel size comes from the filter).
struct ConvGeometry {
  int stride{1};
  int pad{0};
};

/// Output size of a convolution along one axis.
inline int conv_output_size(int in, int kernel, ConvGeometry g) noexcept {
  return (in + 2 * g.pad - kernel) / g.stride + 1;
}

/// Where an op runs and how (see the file comment).
class Backend {
 public:
  virtual ~Backend() = default;
  Backend() = default;
  Backend(Backend const&) = delete;
  Backend& operator=(Backend const&) = delete;

  /// The device of every tensor this backend makes.
  [[nodiscard]] virtual Device device() const noexcept = 0;
  /// Element type of float tensors (f32, or f64 for the CPU gradient-check backend).
  [[nodiscard]] virtual DType float_type() const noexcept = 0;
  /// One line: device name, libraries, math mode.
  [[nodiscard]] virtual std::string describe() const = 0;
  /// Whether the convolution supports `layout` (both built-in backends support both).
  [[nodiscard]] virtual bool supports(Layout layout) const noexcept = 0;
  /// The native stream handle ops are queued on (a cudaStream_t for CUDA), or null.
  [[nodiscard]] virtual void* stream_handle() const noexcept { return nullptr; }

  // ---- memory ----
  /// An uninitialised tensor.
  [[nodiscard]] virtual Tensor empty(Shape shape, Layout layout, DType dtype) = 0;
  /// An uninitialised float tensor (float_type()).
  [[nodiscard]] Tensor empty(Shape shape, Layout layout) {
    return empty(shape, layout, float_type());
  }
  /// Copies `values` (host, one per element in memory order) into `dst`, converting to its
  /// element type. Slow path: initialisation and tests. Waits until the copy is done.
  virtual void write(Tensor& dst, std::vector<double> const& values) = 0;
  /// The elements of `src` in memory order, converted to double. Waits for queued work.
  [[nodiscard]] virtual std::vector<double> read(Tensor const& src) = 0;
  /// Copies `bytes` of host memory in `dst`'s element type into `dst` (ordered with the ops).
  virtual void upload(Tensor& dst, void const* host, std::size_t bytes) = 0;
  /// Sets every element of a float tensor to `value`.
  virtual void fill(Tensor& dst, double value) = 0;
  /// Waits until every queued op has finished.
  virtual void synchronize() = 0;
  /// From now on, device memory whose tensors are released stays allocated until the backend is
  /// destroyed, instead of going back to the device. A captured CUDA graph keeps the addresses
  /// of every buffer it used; a buffer freed while the graph lives (a model reallocating its
  /// outputs for another input shape, a workspace that grows) must not be handed out again.
  /// The CPU backend has no graphs and ignores it.
  virtual void retain_freed_memory() {}

  // ---- convolution (filter [k, c, r, s] in the activations' layout: KCRS or KRSC) ----
  /// y[n, k, oh, ow] =
  ///     sum_{c, r, s} x[n, c, oh*stride - pad + r, ow*stride - pad + s] * w[k, c, r, s]
  virtual void conv2d_forward(Tensor const& x, Tensor const& w, ConvGeometry g, Tensor& y) = 0;
  /// dx = gradient of the convolution with respect to x, given dy.
  virtual void conv2d_backward_data(Tensor const& dy, Tensor const& w, ConvGeometry g,
                                    Tensor& dx) = 0;
  /// dw = gradient of the convolution with respect to w, given x and dy.
  virtual void conv2d_backward_filter(Tensor const& x, Tensor const& dy, ConvGeometry g,
                                      Tensor& dw) = 0;

  // ---- batch normalisation, training mode: statistics over n, h, w per channel ----
  /// y = (x - mean) * invstd * gamma + beta with the batch's mean and biased variance;
  /// saved_mean/saved_invstd ([c]) keep them for backward; running statistics are updated
  /// with `momentum` (running = (1 - momentum) * running + momentum * batch, unbiased variance).
  virtual void batchnorm_forward(Tensor const& x, Tensor const& gamma, Tensor const& beta,
                                 double eps, double momentum, Tensor& running_mean,
                                 Tensor& running_var, Tensor& saved_mean, Tensor& saved_invstd,
                                 Tensor& y) = 0;
  /// Gradients of batchnorm_forward (training mode) for x, gamma and beta.
  virtual void batchnorm_backward(Tensor const& x, Tensor const& dy, Tensor const& gamma,
                                  Tensor const& saved_mean, Tensor const& saved_invstd, Tensor& dx,
                                  Tensor& dgamma, Tensor& dbeta) = 0;

  // ---- element-wise ----
  /// y = max(x, 0).
  virtual void relu_forward(Tensor const& x, Tensor& y) = 0;
  /// dx = dy where y > 0, else 0 (y: the forward output).
  virtual void relu_backward(Tensor const& y, Tensor const& dy, Tensor& dx) = 0;
  /// y = a + b (same shape and layout).
  virtual void add(Tensor const& a, Tensor const& b, Tensor& y) = 0;

  // ---- pooling ----
  /// y[n, c, 1, 1] = mean over h, w of x[n, c, h, w].
  virtual void global_avg_pool_forward(Tensor const& x, Tensor& y) = 0;
  /// dx[n, c, h, w] = dy[n, c] / (h * w).
  virtual void global_avg_pool_backward(Tensor const& dy, Tensor& dx) = 0;

  // ---- matrices ----
  /// c = alpha * op(a) * op(b) + beta * c, op = transpose when the flag is set (row-major).
  virtual void gemm(bool transpose_a, bool transpose_b, double alpha, Tensor const& a,
                    Tensor const& b, double beta, Tensor& c) = 0;
  /// y[i, j] += bias[j].
  virtual void add_bias(Tensor& y, Tensor const& bias) = 0;
  /// y[j] = sum_i x[i, j] (the gradient of a bias).
  virtual void sum_rows(Tensor const& x, Tensor& y) = 0;

  // ---- loss ----
  /// Softmax cross-entropy of logits [n, k] against labels ([n] i32, each in [0, k)):
  /// metrics[0] = mean loss, metrics[1] = number of rows whose arg-max is the label;
  /// dlogits = (softmax - one_hot) / n.
  virtual void softmax_cross_entropy(Tensor const& logits, Tensor const& labels, Tensor& metrics,
                                     Tensor& dlogits) = 0;

  // ---- optimizer ----
  /// SGD with momentum (PyTorch's form): g' = g + weight_decay * w; v = momentum * v + g';
  /// w -= lr * v. All three tensors have the same size.
  virtual void sgd_momentum(Tensor& w, Tensor const& g, Tensor& v, double lr, double momentum,
                            double weight_decay) = 0;
};

/// Throws std::invalid_argument("<op>: <what> is <actual>, expected <expected>") unless equal.
void check_shape(char const* op, char const* what, Tensor const& t, Shape expected);
/// Throws std::invalid_argument unless `t` has `dtype`.
void check_dtype(char const* op, char const* what, Tensor const& t, DType dtype);
/// Throws std::invalid_argument unless `a` and `b` have the same shape and layout.
void check_same(char const* op, Tensor const& a, Tensor const& b);

/// Output shape of conv2d_forward for input `x` and filter `w`; throws std::invalid_argument
/// when the channels do not match or the output would be empty.
Shape conv_output_shape(Shape const& x, Shape const& w, ConvGeometry g);

}  // namespace nn
