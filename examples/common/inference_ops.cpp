#include "common/inference_ops.hpp"

#include "common/inference_ops_detail.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace nn {

char const* to_string(Activation act) noexcept {
  switch (act) {
    case Activation::none: return "none";
    case Activation::relu: return "relu";
    case Activation::sigmoid: return "sigmoid";
  }
  return "?";
}

Shape pool_output_shape(Shape const& x, PoolGeometry g) {
  if (g.kernel < 1 || g.stride < 1 || g.pad < 0 || 2 * g.pad > g.kernel) {
    throw std::invalid_argument("max_pool2d: kernel " + std::to_string(g.kernel) + ", stride " +
                                std::to_string(g.stride) + ", pad " + std::to_string(g.pad) +
                                " (need kernel, stride >= 1 and 0 <= pad <= kernel / 2)");
  }
  Shape y{x.n, x.c, (x.h + 2 * g.pad - g.kernel) / g.stride + 1,
          (x.w + 2 * g.pad - g.kernel) / g.stride + 1};
  if (y.h < 1 || y.w < 1 || x.h + 2 * g.pad < g.kernel || x.w + 2 * g.pad < g.kernel) {
    throw std::invalid_argument("max_pool2d: input " + x.str() + " is smaller than the " +
                                std::to_string(g.kernel) + "x" + std::to_string(g.kernel) +
                                " window");
  }
  return y;
}

namespace detail {

namespace {
[[noreturn]] void fail(char const* op, std::string const& what) {
  throw std::invalid_argument(std::string{op} + ": " + what);
}
std::string dims(int rows, int cols) { return std::to_string(rows) + "x" + std::to_string(cols); }
}  // namespace

void check_float(char const* op, char const* what, Tensor const& t, DType dtype) {
  if (!t.defined()) fail(op, std::string{what} + " is undefined");
  if (t.dtype() != dtype) {
    fail(op,
         std::string{what} + " is " + t.describe() + ", expected element type " + to_string(dtype));
  }
}

void check_bias_act(Tensor const& y, Tensor const& bias, Tensor const* residual) {
  if (!y.defined() || !bias.defined()) fail("bias_act", "undefined tensor");
  if (bias.numel() != static_cast<std::size_t>(y.shape().c)) {
    fail("bias_act", "bias has " + std::to_string(bias.numel()) + " elements, y " + y.describe() +
                         " has " + std::to_string(y.shape().c) + " channels");
  }
  if (y.shape().numel() > 0 && y.shape().h * y.shape().w != 1 && y.layout() != Layout::nhwc) {
    fail("bias_act", "y " + y.describe() +
                         " is an NCHW feature map: per-column bias needs NHWC (channels last)");
  }
  if (residual != nullptr && (residual->shape() != y.shape() || residual->layout() != y.layout())) {
    fail("bias_act", "residual " + residual->describe() + " differs from y " + y.describe());
  }
}

void check_add_repeat(Tensor const& a, Tensor const& b, Tensor const& y) {
  if (!a.defined() || !b.defined() || !y.defined()) fail("add_repeat", "undefined tensor");
  if (b.rows() < 1 || a.cols() != b.cols() || a.rows() % b.rows() != 0) {
    fail("add_repeat", "cannot repeat b (" + dims(b.rows(), b.cols()) + ") over a (" +
                           dims(a.rows(), a.cols()) + ")");
  }
  if (y.rows() != a.rows() || y.cols() != a.cols()) {
    fail("add_repeat", "y is " + dims(y.rows(), y.cols()) + ", a is " + dims(a.rows(), a.cols()));
  }
}

void check_layer_norm(Tensor const& x, Tensor const* residual, Tensor const& gamma,
                      Tensor const& beta, double eps, Tensor const& y) {
  if (!x.defined() || !y.defined() || !gamma.defined() || !beta.defined()) {
    fail("layer_norm", "undefined tensor");
  }
  auto const cols = static_cast<std::size_t>(x.cols());
  if (gamma.numel() != cols || beta.numel() != cols) {
    fail("layer_norm", "gamma and beta need " + std::to_string(cols) + " elements, have " +
                           std::to_string(gamma.numel()) + " and " + std::to_string(beta.numel()));
  }
  if (y.rows() != x.rows() || y.cols() != x.cols()) {
    fail("layer_norm", "y is " + dims(y.rows(), y.cols()) + ", x is " + dims(x.rows(), x.cols()));
  }
  if (residual != nullptr && (residual->rows() != x.rows() || residual->cols() != x.cols())) {
    fail("layer_norm", "residual is " + dims(residual->rows(), residual->cols()) + ", x is " +
                           dims(x.rows(), x.cols()));
  }
  if (!(eps > 0.0) || !std::isfinite(eps)) fail("layer_norm", "eps must be positive and finite");
}

void check_softmax_rows(Tensor const& x, Tensor const& y) {
  if (!x.defined() || !y.defined()) fail("softmax_rows", "undefined tensor");
  if (x.cols() < 1) fail("softmax_rows", "rows are empty");
  if (y.rows() != x.rows() || y.cols() != x.cols()) {
    fail("softmax_rows", "y is " + dims(y.rows(), y.cols()) + ", x is " + dims(x.rows(), x.cols()));
  }
}

void check_heads(bool split, Tensor const& x, int batch, int heads, Tensor const& y) {
  char const* op = split ? "split_heads" : "merge_heads";
  if (!x.defined() || !y.defined()) fail(op, "undefined tensor");
  if (batch < 1 || heads < 1) fail(op, "batch and heads must be at least 1");
  Tensor const& tokens = split ? x : y;
  Tensor const& per_head = split ? y : x;
  if (tokens.rows() % batch != 0 || tokens.cols() % heads != 0) {
    fail(op, "tokens " + dims(tokens.rows(), tokens.cols()) + " do not split into " +
                 std::to_string(batch) + " images and " + std::to_string(heads) + " heads");
  }
  int const head_dim = tokens.cols() / heads;
  if (per_head.rows() != tokens.rows() * heads || per_head.cols() != head_dim) {
    fail(op, "per-head matrix is " + dims(per_head.rows(), per_head.cols()) + ", expected " +
                 dims(tokens.rows() * heads, head_dim));
  }
}

void check_batched_gemm(bool ta, bool tb, int batch, int m, int n, int k, Tensor const& a,
                        Tensor const& b, Tensor const& c) {
  (void)ta;
  (void)tb;
  if (!a.defined() || !b.defined() || !c.defined()) fail("batched_gemm", "undefined tensor");
  if (batch < 1 || m < 1 || n < 1 || k < 1) fail("batched_gemm", "batch, m, n, k must be >= 1");
  auto const need = [batch](int r, int s) {
    return static_cast<std::size_t>(batch) * static_cast<std::size_t>(r) *
           static_cast<std::size_t>(s);
  };
  if (a.numel() != need(m, k) || b.numel() != need(k, n) || c.numel() != need(m, n)) {
    fail("batched_gemm", std::to_string(batch) + " entries of " + dims(m, k) + " x " + dims(k, n) +
                             " -> " + dims(m, n) + " need " + std::to_string(need(m, k)) + ", " +
                             std::to_string(need(k, n)) + ", " + std::to_string(need(m, n)) +
                             " elements; a, b, c hold " + std::to_string(a.numel()) + ", " +
                             std::to_string(b.numel()) + ", " + std::to_string(c.numel()));
  }
}

void check_max_pool2d(Tensor const& x, PoolGeometry g, Tensor const& y) {
  if (!x.defined() || !y.defined()) fail("max_pool2d", "undefined tensor");
  Shape const want = pool_output_shape(x.shape(), g);
  if (y.shape() != want || y.layout() != x.layout()) {
    fail("max_pool2d",
         "y is " + y.describe() + ", expected " + want.str() + " " + to_string(x.layout()));
  }
}

}  // namespace detail

std::unique_ptr<InferenceOps> make_inference_ops(Backend& backend,
                                                 InferenceOpsOptions const& options) {
  if (backend.device() == Device::cpu) return detail::make_cpu_inference_ops(backend);
  return detail::make_cuda_inference_ops(backend.stream_handle(), options);
}

}  // namespace nn
