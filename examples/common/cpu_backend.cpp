#include "common/cpu_backend.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace nn {
namespace {

using std::size_t;

inline size_t uz(int v) noexcept { return static_cast<size_t>(v); }

/// A tensor's per-channel view: element (o, c, i) sits at (o * C + c) * inner + i.
/// NCHW: outer = n, inner = h*w. NHWC: outer = n*h*w, inner = 1.
struct ChannelView {
  size_t outer, channels, inner;
};

ChannelView channel_view(Tensor const& t) noexcept {
  Shape const& s = t.shape();
  size_t const hw = uz(s.h) * uz(s.w);
  if (t.layout() == Layout::nchw) return {uz(s.n), uz(s.c), hw};
  return {uz(s.n) * hw, uz(s.c), 1};
}

/// Row-major dot-product GEMM: out[i*n + j] = sum_p a[i*k + p] * b[j*k + p] (b given transposed).
template <class T>
void gemm_abt(size_t m, size_t n, size_t k, T const* a, T const* bt, T* out) {
  for (size_t i = 0; i < m; ++i) {
    T const* ai = a + i * k;
    for (size_t j = 0; j < n; ++j) {
      T const* bj = bt + j * k;
      T acc = T(0);
      for (size_t p = 0; p < k; ++p) acc += ai[p] * bj[p];
      out[i * n + j] = acc;
    }
  }
}

template <class T>
class CpuBackend final : public Backend {
 public:
  [[nodiscard]] Device device() const noexcept override { return Device::cpu; }
  [[nodiscard]] DType float_type() const noexcept override {
    return sizeof(T) == 4 ? DType::f32 : DType::f64;
  }
  [[nodiscard]] std::string describe() const override {
    return std::string{"cpu ("} + to_string(float_type()) + ", one thread, im2col + GEMM)";
  }
  [[nodiscard]] bool supports(Layout) const noexcept override { return true; }

  [[nodiscard]] Tensor empty(Shape shape, Layout layout, DType dtype) override {
    size_t const n = std::max<size_t>(shape.numel(), 1);
    size_t const bytes = n * size_of(dtype);
    void* p = ::operator new (bytes, std::align_val_t{64});
    std::shared_ptr<void> storage(p, [](void* q) { ::operator delete (q, std::align_val_t{64}); });
    return make_tensor(std::move(storage), n, shape, layout, dtype, Device::cpu);
  }

  void write(Tensor& dst, std::vector<double> const& values) override {
    if (values.size() != dst.numel()) {
      throw std::invalid_argument("write: " + std::to_string(values.size()) + " values for " +
                                  dst.describe());
    }
    if (dst.dtype() == DType::i32) {
      auto* d = dst.data<std::int32_t>();
      for (size_t i = 0; i < values.size(); ++i) d[i] = static_cast<std::int32_t>(values[i]);
    } else if (dst.dtype() == DType::f32) {
      auto* d = dst.data<float>();
      for (size_t i = 0; i < values.size(); ++i) d[i] = static_cast<float>(values[i]);
    } else {
      std::copy(values.begin(), values.end(), dst.data<double>());
    }
  }

  [[nodiscard]] std::vector<double> read(Tensor const& src) override {
    std::vector<double> out(src.numel());
    if (src.dtype() == DType::i32) {
      auto const* s = src.data<std::int32_t>();
      for (size_t i = 0; i < out.size(); ++i) out[i] = s[i];
    } else if (src.dtype() == DType::f32) {
      auto const* s = src.data<float>();
      for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(s[i]);
    } else {
      std::copy(src.data<double>(), src.data<double>() + out.size(), out.begin());
    }
    return out;
  }

  void upload(Tensor& dst, void const* host, size_t bytes) override {
    if (bytes != dst.bytes()) {
      throw std::invalid_argument("upload: " + std::to_string(bytes) + " bytes for " +
                                  dst.describe() + " (" + std::to_string(dst.bytes()) + " bytes)");
    }
    std::memcpy(dst.raw(), host, bytes);
  }

  void fill(Tensor& dst, double value) override {
    T* d = f(dst, "fill", "dst");
    std::fill(d, d + dst.numel(), static_cast<T>(value));
  }

  void synchronize() override {}

  // ---- convolution: per image, im2col [P = oh*ow, Kd = c*r*s] and a GEMM ----
  // Column kd of (c, r, s) is the filter's own inner offset, so the filter [k, Kd] is used as
  // stored in either layout (KCRS or KRSC).

  void conv2d_forward(Tensor const& x, Tensor const& w, ConvGeometry g, Tensor& y) override {
    Shape const ys = conv_output_shape(x.shape(), w.shape(), g);
    check_shape("conv2d_forward", "y", y, ys);
    check_layouts("conv2d_forward", x, w, y);
    Geometry const q = geometry(x.shape(), w.shape(), ys, g, x.layout());
    std::vector<T> col(q.p * q.kd), out(q.p * q.k);
    T const* xd = f(x, "conv2d_forward", "x");
    T const* wd = f(w, "conv2d_forward", "w");
    T* yd = f(y, "conv2d_forward", "y");
    Strides const sy = strides_of(ys, y.layout());
    for (int n = 0; n < x.shape().n; ++n) {
      im2col(q, xd, n, col.data());
      gemm_abt(q.p, q.k, q.kd, col.data(), wd, out.data());
      for (int oh = 0; oh < ys.h; ++oh) {
        for (int ow = 0; ow < ys.w; ++ow) {
          size_t const p = uz(oh) * uz(ys.w) + uz(ow);
          for (int k = 0; k < ys.c; ++k) yd[offset_of(sy, n, k, oh, ow)] = out[p * q.k + uz(k)];
        }
      }
    }
  }

  void conv2d_backward_data(Tensor const& dy, Tensor const& w, ConvGeometry g,
                            Tensor& dx) override {
    Shape const ys = conv_output_shape(dx.shape(), w.shape(), g);
    check_shape("conv2d_backward_data", "dy", dy, ys);
    check_layouts("conv2d_backward_data", dx, w, dy);
    Geometry const q = geometry(dx.shape(), w.shape(), ys, g, dx.layout());
    std::vector<T> dcol(q.p * q.kd), dyn(q.p * q.k);
    T const* dyd = f(dy, "conv2d_backward_data", "dy");
    T const* wd = f(w, "conv2d_backward_data", "w");
    T* dxd = f(dx, "conv2d_backward_data", "dx");
    std::fill(dxd, dxd + dx.numel(), T(0));
    for (int n = 0; n < dx.shape().n; ++n) {
      gather_rows(ys, dy.layout(), dyd, n, dyn.data());
      std::fill(dcol.begin(), dcol.end(), T(0));
      for (size_t p = 0; p < q.p; ++p) {
        T* dc = dcol.data() + p * q.kd;
        for (size_t k = 0; k < q.k; ++k) {
          T const a = dyn[p * q.k + k];
          T const* wk = wd + k * q.kd;
          for (size_t j = 0; j < q.kd; ++j) dc[j] += a * wk[j];
        }
      }
      col2im(q, dcol.data(), n, dxd);
    }
  }

  void conv2d_backward_filter(Tensor const& x, Tensor const& dy, ConvGeometry g,
                              Tensor& dw) override {
    Shape const ys = conv_output_shape(x.shape(), dw.shape(), g);
    check_shape("conv2d_backward_filter", "dy", dy, ys);
    check_layouts("conv2d_backward_filter", x, dw, dy);
    Geometry const q = geometry(x.shape(), dw.shape(), ys, g, x.layout());
    std::vector<T> col(q.p * q.kd), dyn(q.p * q.k);
    T const* xd = f(x, "conv2d_backward_filter", "x");
    T const* dyd = f(dy, "conv2d_backward_filter", "dy");
    T* dwd = f(dw, "conv2d_backward_filter", "dw");
    std::fill(dwd, dwd + dw.numel(), T(0));
    for (int n = 0; n < x.shape().n; ++n) {
      im2col(q, xd, n, col.data());
      gather_rows(ys, dy.layout(), dyd, n, dyn.data());
      for (size_t p = 0; p < q.p; ++p) {
        T const* cp = col.data() + p * q.kd;
        for (size_t k = 0; k < q.k; ++k) {
          T const a = dyn[p * q.k + k];
          T* dk = dwd + k * q.kd;
          for (size_t j = 0; j < q.kd; ++j) dk[j] += a * cp[j];
        }
      }
    }
  }

  // ---- batch normalisation ----

  void batchnorm_forward(Tensor const& x, Tensor const& gamma, Tensor const& beta, double eps,
                         double momentum, Tensor& running_mean, Tensor& running_var,
                         Tensor& saved_mean, Tensor& saved_invstd, Tensor& y) override {
    char const* op = "batchnorm_forward";
    check_same(op, x, y);
    Shape const cs{x.shape().c, 1, 1, 1};
    for (Tensor const* t : std::initializer_list<Tensor const*>{
             &gamma, &beta, &running_mean, &running_var, &saved_mean, &saved_invstd})
      check_shape(op, "per-channel tensor", *t, cs);
    ChannelView const v = channel_view(x);
    double const count = static_cast<double>(v.outer * v.inner);
    if (count < 2) throw std::invalid_argument("batchnorm_forward: needs >= 2 values per channel");
    T const* xd = f(x, op, "x");
    T* yd = f(y, op, "y");
    T const* gd = f(gamma, op, "gamma");
    T const* bd = f(beta, op, "beta");
    T* rm = f(running_mean, op, "running_mean");
    T* rv = f(running_var, op, "running_var");
    T* sm = f(saved_mean, op, "saved_mean");
    T* si = f(saved_invstd, op, "saved_invstd");
    for (size_t c = 0; c < v.channels; ++c) {
      double s1 = 0, s2 = 0;
      for_channel(v, c, [&](size_t i) {
        double const e = static_cast<double>(xd[i]);
        s1 += e;
        s2 += e * e;
      });
      double const mean = s1 / count;
      double const var = std::max(s2 / count - mean * mean, 0.0);
      double const invstd = 1.0 / std::sqrt(var + eps);
      sm[c] = static_cast<T>(mean);
      si[c] = static_cast<T>(invstd);
      rm[c] = static_cast<T>((1 - momentum) * static_cast<double>(rm[c]) + momentum * mean);
      rv[c] = static_cast<T>((1 - momentum) * static_cast<double>(rv[c]) +
                             momentum * var * count / (count - 1));
      T const scale = static_cast<T>(invstd * static_cast<double>(gd[c]));
      T const shift =
          static_cast<T>(static_cast<double>(bd[c]) - mean * invstd * static_cast<double>(gd[c]));
      for_channel(v, c, [&](size_t i) { yd[i] = xd[i] * scale + shift; });
    }
  }

  void batchnorm_backward(Tensor const& x, Tensor const& dy, Tensor const& gamma,
                          Tensor const& saved_mean, Tensor const& saved_invstd, Tensor& dx,
                          Tensor& dgamma, Tensor& dbeta) override {
    char const* op = "batchnorm_backward";
    check_same(op, x, dy);
    check_same(op, x, dx);
    Shape const cs{x.shape().c, 1, 1, 1};
    for (Tensor const* t :
         std::initializer_list<Tensor const*>{&gamma, &saved_mean, &saved_invstd, &dgamma, &dbeta})
      check_shape(op, "per-channel tensor", *t, cs);
    ChannelView const v = channel_view(x);
    double const count = static_cast<double>(v.outer * v.inner);
    T const* xd = f(x, op, "x");
    T const* dyd = f(dy, op, "dy");
    T* dxd = f(dx, op, "dx");
    T const* gd = f(gamma, op, "gamma");
    T const* sm = f(saved_mean, op, "saved_mean");
    T const* si = f(saved_invstd, op, "saved_invstd");
    T* dg = f(dgamma, op, "dgamma");
    T* db = f(dbeta, op, "dbeta");
    for (size_t c = 0; c < v.channels; ++c) {
      double const mean = static_cast<double>(sm[c]);
      double const invstd = static_cast<double>(si[c]);
      double s1 = 0, s2 = 0;
      for_channel(v, c, [&](size_t i) {
        double const g = static_cast<double>(dyd[i]);
        s1 += g;
        s2 += g * (static_cast<double>(xd[i]) - mean) * invstd;
      });
      db[c] = static_cast<T>(s1);
      dg[c] = static_cast<T>(s2);
      double const k = static_cast<double>(gd[c]) * invstd;
      double const m1 = s1 / count, m2 = s2 / count;
      for_channel(v, c, [&](size_t i) {
        double const xhat = (static_cast<double>(xd[i]) - mean) * invstd;
        dxd[i] = static_cast<T>(k * (static_cast<double>(dyd[i]) - m1 - xhat * m2));
      });
    }
  }

  // ---- element-wise ----

  void relu_forward(Tensor const& x, Tensor& y) override {
    check_same("relu_forward", x, y);
    T const* xd = f(x, "relu_forward", "x");
    T* yd = f(y, "relu_forward", "y");
    for (size_t i = 0; i < x.numel(); ++i) yd[i] = xd[i] > T(0) ? xd[i] : T(0);
  }

  void relu_backward(Tensor const& y, Tensor const& dy, Tensor& dx) override {
    check_same("relu_backward", y, dy);
    check_same("relu_backward", y, dx);
    T const* yd = f(y, "relu_backward", "y");
    T const* g = f(dy, "relu_backward", "dy");
    T* d = f(dx, "relu_backward", "dx");
    for (size_t i = 0; i < y.numel(); ++i) d[i] = yd[i] > T(0) ? g[i] : T(0);
  }

  void add(Tensor const& a, Tensor const& b, Tensor& y) override {
    check_same("add", a, b);
    check_same("add", a, y);
    T const* ad = f(a, "add", "a");
    T const* bd = f(b, "add", "b");
    T* yd = f(y, "add", "y");
    for (size_t i = 0; i < a.numel(); ++i) yd[i] = ad[i] + bd[i];
  }

  // ---- pooling ----

  void global_avg_pool_forward(Tensor const& x, Tensor& y) override {
    Shape const& s = x.shape();
    check_shape("global_avg_pool_forward", "y", y, Shape{s.n, s.c, 1, 1});
    Strides const sx = strides_of(s, x.layout());
    T const* xd = f(x, "global_avg_pool_forward", "x");
    T* yd = f(y, "global_avg_pool_forward", "y");
    double const inv = 1.0 / (static_cast<double>(s.h) * static_cast<double>(s.w));
    for (int n = 0; n < s.n; ++n) {
      for (int c = 0; c < s.c; ++c) {
        double acc = 0;
        for (int h = 0; h < s.h; ++h)
          for (int w = 0; w < s.w; ++w) acc += static_cast<double>(xd[offset_of(sx, n, c, h, w)]);
        yd[uz(n) * uz(s.c) + uz(c)] = static_cast<T>(acc * inv);
      }
    }
  }

  void global_avg_pool_backward(Tensor const& dy, Tensor& dx) override {
    Shape const& s = dx.shape();
    check_shape("global_avg_pool_backward", "dy", dy, Shape{s.n, s.c, 1, 1});
    Strides const sx = strides_of(s, dx.layout());
    T const* g = f(dy, "global_avg_pool_backward", "dy");
    T* d = f(dx, "global_avg_pool_backward", "dx");
    double const inv = 1.0 / (static_cast<double>(s.h) * static_cast<double>(s.w));
    for (int n = 0; n < s.n; ++n)
      for (int c = 0; c < s.c; ++c) {
        T const v = static_cast<T>(static_cast<double>(g[uz(n) * uz(s.c) + uz(c)]) * inv);
        for (int h = 0; h < s.h; ++h)
          for (int w = 0; w < s.w; ++w) d[offset_of(sx, n, c, h, w)] = v;
      }
  }

  // ---- matrices ----

  void gemm(bool ta, bool tb, double alpha, Tensor const& a, Tensor const& b, double beta,
            Tensor& c) override {
    size_t const m = uz(ta ? a.cols() : a.rows()), k = uz(ta ? a.rows() : a.cols());
    size_t const kb = uz(tb ? b.cols() : b.rows()), n = uz(tb ? b.rows() : b.cols());
    if (k != kb || uz(c.rows()) != m || uz(c.cols()) != n) {
      throw std::invalid_argument("gemm: op(a) is " + std::to_string(m) + "x" + std::to_string(k) +
                                  ", op(b) is " + std::to_string(kb) + "x" + std::to_string(n) +
                                  ", c is " + std::to_string(c.rows()) + "x" +
                                  std::to_string(c.cols()));
    }
    T const* ad = f(a, "gemm", "a");
    T const* bd = f(b, "gemm", "b");
    T* cd = f(c, "gemm", "c");
    // op(a) as [m, k] rows and op(b) transposed as [n, k] rows, then row dot products.
    std::vector<T> at(m * k), bt(n * k), out(m * n);
    for (size_t i = 0; i < m; ++i)
      for (size_t p = 0; p < k; ++p) at[i * k + p] = ta ? ad[p * m + i] : ad[i * k + p];
    for (size_t j = 0; j < n; ++j)
      for (size_t p = 0; p < k; ++p) bt[j * k + p] = tb ? bd[j * k + p] : bd[p * n + j];
    gemm_abt(m, n, k, at.data(), bt.data(), out.data());
    for (size_t i = 0; i < m * n; ++i) {
      double const prev = beta == 0.0 ? 0.0 : beta * static_cast<double>(cd[i]);
      cd[i] = static_cast<T>(alpha * static_cast<double>(out[i]) + prev);
    }
  }

  void add_bias(Tensor& y, Tensor const& bias) override {
    size_t const rows = uz(y.rows()), cols = uz(y.cols());
    if (bias.numel() != cols) {
      throw std::invalid_argument("add_bias: bias has " + std::to_string(bias.numel()) +
                                  " elements, y has " + std::to_string(cols) + " columns");
    }
    T* yd = f(y, "add_bias", "y");
    T const* bd = f(bias, "add_bias", "bias");
    for (size_t i = 0; i < rows; ++i)
      for (size_t j = 0; j < cols; ++j) yd[i * cols + j] += bd[j];
  }

  void sum_rows(Tensor const& x, Tensor& y) override {
    size_t const rows = uz(x.rows()), cols = uz(x.cols());
    if (y.numel() != cols) {
      throw std::invalid_argument("sum_rows: y has " + std::to_string(y.numel()) +
                                  " elements, x has " + std::to_string(cols) + " columns");
    }
    T const* xd = f(x, "sum_rows", "x");
    T* yd = f(y, "sum_rows", "y");
    for (size_t j = 0; j < cols; ++j) {
      double acc = 0;
      for (size_t i = 0; i < rows; ++i) acc += static_cast<double>(xd[i * cols + j]);
      yd[j] = static_cast<T>(acc);
    }
  }

  // ---- loss ----

  void softmax_cross_entropy(Tensor const& logits, Tensor const& labels, Tensor& metrics,
                             Tensor& dlogits) override {
    char const* op = "softmax_cross_entropy";
    size_t const n = uz(logits.rows()), k = uz(logits.cols());
    check_same(op, logits, dlogits);
    check_dtype(op, "labels", labels, DType::i32);
    if (labels.numel() != n || metrics.numel() != 2) {
      throw std::invalid_argument(std::string{op} + ": labels need " + std::to_string(n) +
                                  " elements and metrics 2; got " + labels.describe() + ", " +
                                  metrics.describe());
    }
    T const* z = f(logits, op, "logits");
    T* dz = f(dlogits, op, "dlogits");
    std::int32_t const* y = labels.data<std::int32_t>();
    double loss = 0, correct = 0;
    for (size_t i = 0; i < n; ++i) {
      if (y[i] < 0 || uz(y[i]) >= k) {
        throw std::invalid_argument(std::string{op} + ": label " + std::to_string(y[i]) +
                                    " of row " + std::to_string(i) + " is outside [0, " +
                                    std::to_string(k) + ")");
      }
      T const* zi = z + i * k;
      size_t best = 0;
      for (size_t j = 1; j < k; ++j)
        if (zi[j] > zi[best]) best = j;
      double const mx = static_cast<double>(zi[best]);
      double sum = 0;
      for (size_t j = 0; j < k; ++j) sum += std::exp(static_cast<double>(zi[j]) - mx);
      double const lse = mx + std::log(sum);
      size_t const label = uz(y[i]);
      loss += lse - static_cast<double>(zi[label]);
      if (best == label) correct += 1;
      for (size_t j = 0; j < k; ++j) {
        double const p = std::exp(static_cast<double>(zi[j]) - lse);
        dz[i * k + j] = static_cast<T>((p - (j == label ? 1.0 : 0.0)) / static_cast<double>(n));
      }
    }
    T* m = f(metrics, op, "metrics");
    m[0] = static_cast<T>(loss / static_cast<double>(n));
    m[1] = static_cast<T>(correct);
  }

  // ---- optimizer ----

  void sgd_momentum(Tensor& w, Tensor const& g, Tensor& v, double lr, double momentum,
                    double weight_decay) override {
    if (w.numel() != g.numel() || w.numel() != v.numel()) {
      throw std::invalid_argument("sgd_momentum: sizes differ: " + w.describe() + ", " +
                                  g.describe() + ", " + v.describe());
    }
    T* wd = f(w, "sgd_momentum", "w");
    T const* gd = f(g, "sgd_momentum", "g");
    T* vd = f(v, "sgd_momentum", "v");
    T const lr_t = static_cast<T>(lr), mu = static_cast<T>(momentum),
            wdc = static_cast<T>(weight_decay);
    for (size_t i = 0; i < w.numel(); ++i) {
      T const grad = gd[i] + wdc * wd[i];
      vd[i] = mu * vd[i] + grad;
      wd[i] -= lr_t * vd[i];
    }
  }

 private:
  struct Geometry {
    Shape x, w, y;
    ConvGeometry g;
    Strides sx, sw;
    size_t p, k, kd;  // output pixels, output channels, filter size c*r*s
  };

  static Geometry geometry(Shape const& x, Shape const& w, Shape const& y, ConvGeometry g,
                           Layout layout) {
    Geometry q{x, w, y, g, strides_of(x, layout), strides_of(w, layout), 0, 0, 0};
    q.p = uz(y.h) * uz(y.w);
    q.k = uz(w.n);
    q.kd = uz(w.c) * uz(w.h) * uz(w.w);
    return q;
  }

  static void check_layouts(char const* op, Tensor const& a, Tensor const& w, Tensor const& b) {
    if (a.layout() != w.layout() || a.layout() != b.layout()) {
      throw std::invalid_argument(std::string{op} + ": layouts differ: " + a.describe() + ", " +
                                  w.describe() + ", " + b.describe());
    }
  }

  /// col[p, kd] = x[n, c, oh*stride - pad + r, ow*stride - pad + s] (0 outside).
  static void im2col(Geometry const& q, T const* x, int n, T* col) {
    for (int oh = 0; oh < q.y.h; ++oh) {
      for (int ow = 0; ow < q.y.w; ++ow) {
        T* row = col + (uz(oh) * uz(q.y.w) + uz(ow)) * q.kd;
        for (int r = 0; r < q.w.h; ++r) {
          int const ih = oh * q.g.stride - q.g.pad + r;
          for (int s = 0; s < q.w.w; ++s) {
            int const iw = ow * q.g.stride - q.g.pad + s;
            bool const inside = ih >= 0 && ih < q.x.h && iw >= 0 && iw < q.x.w;
            for (int c = 0; c < q.x.c; ++c) {
              size_t const kd = uz(c) * q.sw.c + uz(r) * q.sw.h + uz(s) * q.sw.w;
              row[kd] = inside ? x[offset_of(q.sx, n, c, ih, iw)] : T(0);
            }
          }
        }
      }
    }
  }

  /// dx[n, c, ih, iw] += dcol[p, kd] (the adjoint of im2col).
  static void col2im(Geometry const& q, T const* dcol, int n, T* dx) {
    for (int oh = 0; oh < q.y.h; ++oh) {
      for (int ow = 0; ow < q.y.w; ++ow) {
        T const* row = dcol + (uz(oh) * uz(q.y.w) + uz(ow)) * q.kd;
        for (int r = 0; r < q.w.h; ++r) {
          int const ih = oh * q.g.stride - q.g.pad + r;
          if (ih < 0 || ih >= q.x.h) continue;
          for (int s = 0; s < q.w.w; ++s) {
            int const iw = ow * q.g.stride - q.g.pad + s;
            if (iw < 0 || iw >= q.x.w) continue;
            for (int c = 0; c < q.x.c; ++c) {
              size_t const kd = uz(c) * q.sw.c + uz(r) * q.sw.h + uz(s) * q.sw.w;
              dx[offset_of(q.sx, n, c, ih, iw)] += row[kd];
            }
          }
        }
      }
    }
  }

  /// out[p, k] = y[n, k, oh, ow] for image n.
  static void gather_rows(Shape const& ys, Layout layout, T const* y, int n, T* out) {
    Strides const sy = strides_of(ys, layout);
    for (int oh = 0; oh < ys.h; ++oh)
      for (int ow = 0; ow < ys.w; ++ow) {
        size_t const p = uz(oh) * uz(ys.w) + uz(ow);
        for (int k = 0; k < ys.c; ++k) out[p * uz(ys.c) + uz(k)] = y[offset_of(sy, n, k, oh, ow)];
      }
  }

  template <class F>
  static void for_channel(ChannelView const& v, size_t c, F&& fn) {
    for (size_t o = 0; o < v.outer; ++o) {
      size_t const base = (o * v.channels + c) * v.inner;
      for (size_t i = 0; i < v.inner; ++i) fn(base + i);
    }
  }

  /// The float data of `t`, checking its element type and device.
  static T* f(Tensor const& t, char const* op, char const* what) {
    if (!t.defined()) throw std::invalid_argument(std::string{op} + ": " + what + " is undefined");
    if (t.device() != Device::cpu) {
      throw std::invalid_argument(std::string{op} + ": " + what + " is " + t.describe() +
                                  ", the CPU backend needs CPU tensors");
    }
    check_dtype(op, what, t, sizeof(T) == 4 ? DType::f32 : DType::f64);
    return static_cast<T*>(t.raw());
  }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(DType float_type) {
  switch (float_type) {
    case DType::f32: return std::make_unique<CpuBackend<float>>();
    case DType::f64: return std::make_unique<CpuBackend<double>>();
    case DType::i32: break;
  }
  throw std::invalid_argument("make_cpu_backend: the float type must be f32 or f64, not i32");
}

}  // namespace nn
