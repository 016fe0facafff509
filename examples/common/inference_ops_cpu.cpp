// nn::InferenceOps on the CPU: plain loops, one thread, in the backend's float type (f32, or f64
// for high-precision references). Reductions (layer norm, softmax) accumulate in double.
#include "common/inference_ops_detail.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace nn::detail {
namespace {

using std::size_t;

inline size_t uz(int v) noexcept { return static_cast<size_t>(v); }

template <class T>
T activate(Activation act, T v) noexcept {
  switch (act) {
    case Activation::none: return v;
    case Activation::relu: return v > T(0) ? v : T(0);
    case Activation::sigmoid: return T(1) / (T(1) + std::exp(-v));
  }
  return v;
}

template <class T>
class CpuInferenceOps final : public InferenceOps {
 public:
  explicit CpuInferenceOps(DType dtype) : dtype_{dtype} {}

  void bias_act(Tensor& y, Tensor const& bias, Tensor const* residual, Activation act) override {
    check_bias_act(y, bias, residual);
    T* yd = f(y, "bias_act", "y");
    T const* bd = f(bias, "bias_act", "bias");
    T const* rd = residual != nullptr ? f(*residual, "bias_act", "residual") : nullptr;
    size_t const cols = uz(y.shape().c), rows = y.numel() / cols;  // pixels x channels
    for (size_t i = 0; i < rows; ++i) {
      for (size_t j = 0; j < cols; ++j) {
        T v = yd[i * cols + j] + bd[j];
        if (rd != nullptr) v += rd[i * cols + j];
        yd[i * cols + j] = activate(act, v);
      }
    }
  }

  void add_repeat(Tensor const& a, Tensor const& b, Tensor& y) override {
    check_add_repeat(a, b, y);
    T const* ad = f(a, "add_repeat", "a");
    T const* bd = f(b, "add_repeat", "b");
    T* yd = f(y, "add_repeat", "y");
    size_t const block = b.numel();
    for (size_t i = 0; i < a.numel(); ++i) yd[i] = ad[i] + bd[i % block];
  }

  void layer_norm(Tensor const& x, Tensor const* residual, Tensor const& gamma, Tensor const& beta,
                  double eps, Tensor& y) override {
    check_layer_norm(x, residual, gamma, beta, eps, y);
    T const* xd = f(x, "layer_norm", "x");
    T const* rd = residual != nullptr ? f(*residual, "layer_norm", "residual") : nullptr;
    T const* gd = f(gamma, "layer_norm", "gamma");
    T const* bd = f(beta, "layer_norm", "beta");
    T* yd = f(y, "layer_norm", "y");
    size_t const rows = uz(x.rows()), cols = uz(x.cols());
    std::vector<double> row(cols);
    for (size_t i = 0; i < rows; ++i) {
      double sum = 0;
      for (size_t j = 0; j < cols; ++j) {
        double v = static_cast<double>(xd[i * cols + j]);
        if (rd != nullptr) v += static_cast<double>(rd[i * cols + j]);
        row[j] = v;
        sum += v;
      }
      double const mean = sum / static_cast<double>(cols);
      double var = 0;
      for (double v : row) var += (v - mean) * (v - mean);
      double const inv = 1.0 / std::sqrt(var / static_cast<double>(cols) + eps);
      for (size_t j = 0; j < cols; ++j) {
        yd[i * cols + j] = static_cast<T>((row[j] - mean) * inv * static_cast<double>(gd[j]) +
                                          static_cast<double>(bd[j]));
      }
    }
  }

  void softmax_rows(Tensor const& x, Tensor& y) override {
    check_softmax_rows(x, y);
    T const* xd = f(x, "softmax_rows", "x");
    T* yd = f(y, "softmax_rows", "y");
    size_t const rows = uz(x.rows()), cols = uz(x.cols());
    for (size_t i = 0; i < rows; ++i) {
      T const* in = xd + i * cols;
      double const m = static_cast<double>(*std::max_element(in, in + cols));
      double sum = 0;
      for (size_t j = 0; j < cols; ++j) sum += std::exp(static_cast<double>(in[j]) - m);
      for (size_t j = 0; j < cols; ++j) {
        yd[i * cols + j] = static_cast<T>(std::exp(static_cast<double>(in[j]) - m) / sum);
      }
    }
  }

  void split_heads(Tensor const& x, int batch, int heads, Tensor& y) override {
    check_heads(true, x, batch, heads, y);
    permute_heads(f(x, "split_heads", "x"), f(y, "split_heads", "y"), x, batch, heads, true);
  }

  void merge_heads(Tensor const& x, int batch, int heads, Tensor& y) override {
    check_heads(false, x, batch, heads, y);
    permute_heads(f(x, "merge_heads", "x"), f(y, "merge_heads", "y"), y, batch, heads, false);
  }

  void batched_gemm(bool ta, bool tb, int batch, int m, int n, int k, double alpha, Tensor const& a,
                    Tensor const& b, double beta, Tensor& c) override {
    check_batched_gemm(ta, tb, batch, m, n, k, a, b, c);
    T const* ad = f(a, "batched_gemm", "a");
    T const* bd = f(b, "batched_gemm", "b");
    T* cd = f(c, "batched_gemm", "c");
    size_t const M = uz(m), N = uz(n), K = uz(k);
    for (size_t e = 0; e < uz(batch); ++e) {
      T const* ae = ad + e * M * K;
      T const* be = bd + e * K * N;
      T* ce = cd + e * M * N;
      for (size_t i = 0; i < M; ++i) {
        for (size_t j = 0; j < N; ++j) {
          T acc = T(0);
          for (size_t p = 0; p < K; ++p) {
            T const av = ta ? ae[p * M + i] : ae[i * K + p];
            T const bv = tb ? be[j * K + p] : be[p * N + j];
            acc += av * bv;
          }
          double const prev = beta == 0.0 ? 0.0 : beta * static_cast<double>(ce[i * N + j]);
          ce[i * N + j] = static_cast<T>(alpha * static_cast<double>(acc) + prev);
        }
      }
    }
  }

  void max_pool2d(Tensor const& x, PoolGeometry g, Tensor& y) override {
    check_max_pool2d(x, g, y);
    T const* xd = f(x, "max_pool2d", "x");
    T* yd = f(y, "max_pool2d", "y");
    Shape const& xs = x.shape();
    Shape const& ys = y.shape();
    Strides const sx = strides_of(xs, x.layout());
    Strides const sy = strides_of(ys, y.layout());
    for (int n = 0; n < ys.n; ++n) {
      for (int c = 0; c < ys.c; ++c) {
        for (int oh = 0; oh < ys.h; ++oh) {
          for (int ow = 0; ow < ys.w; ++ow) {
            T best = -std::numeric_limits<T>::infinity();
            for (int r = 0; r < g.kernel; ++r) {
              int const ih = oh * g.stride - g.pad + r;
              if (ih < 0 || ih >= xs.h) continue;
              for (int s = 0; s < g.kernel; ++s) {
                int const iw = ow * g.stride - g.pad + s;
                if (iw < 0 || iw >= xs.w) continue;
                best = std::max(best, xd[offset_of(sx, n, c, ih, iw)]);
              }
            }
            yd[offset_of(sy, n, c, oh, ow)] = best;
          }
        }
      }
    }
  }

 private:
  /// tokens [batch * seq, heads * dh] <-> per head [batch * heads * seq, dh].
  static void permute_heads(T const* in, T* out, Tensor const& tokens, int batch, int heads,
                            bool split) {
    size_t const seq = uz(tokens.rows() / batch), d = uz(tokens.cols()), h = uz(heads);
    size_t const dh = d / h;
    for (size_t b = 0; b < uz(batch); ++b) {
      for (size_t hd = 0; hd < h; ++hd) {
        for (size_t t = 0; t < seq; ++t) {
          size_t const tok = (b * seq + t) * d + hd * dh;
          size_t const per = ((b * h + hd) * seq + t) * dh;
          for (size_t j = 0; j < dh; ++j) {
            if (split) {
              out[per + j] = in[tok + j];
            } else {
              out[tok + j] = in[per + j];
            }
          }
        }
      }
    }
  }

  T* f(Tensor const& t, char const* op, char const* what) const {
    check_float(op, what, t, dtype_);
    if (t.device() != Device::cpu) {
      throw std::invalid_argument(std::string{op} + ": " + what + " is " + t.describe() +
                                  ", expected a cpu tensor");
    }
    return static_cast<T*>(t.raw());
  }

  DType dtype_;
};

}  // namespace

std::unique_ptr<InferenceOps> make_cpu_inference_ops(Backend& backend) {
  if (backend.float_type() == DType::f64)
    return std::make_unique<CpuInferenceOps<double>>(DType::f64);
  return std::make_unique<CpuInferenceOps<float>>(DType::f32);
}

}  // namespace nn::detail
