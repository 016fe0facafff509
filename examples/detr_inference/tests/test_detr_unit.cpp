// CPU unit tests of the DETR example: nn::InferenceOps against naive references (attention,
// layer norm, softmax, epilogues, batched GEMM, pooling, head permutes), post-processing
// (top-k, box conversion), the latency summary, the options, and the model (shapes,
// determinism, the module paths its hooks report).
#include "graph_forward.hpp"
#include "model.hpp"
#include "options.hpp"
#include "postprocess.hpp"

#include "common/cli.hpp"
#include "common/cpu_backend.hpp"
#include "common/inference_ops.hpp"
#include "common/rng.hpp"

#include <nsightkit/module.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace {

using nn::Layout;
using nn::Shape;
using nn::Tensor;

/// A CPU backend and its ops, in f32 or f64.
struct Cpu {
  explicit Cpu(nn::DType t = nn::DType::f32)
      : be{nn::make_cpu_backend(t)}, ops{nn::make_inference_ops(*be)} {}
  Tensor make(Shape s, std::vector<double> const& v, Layout l = Layout::nchw) {
    Tensor t = be->empty(s, l);
    be->write(t, v);
    return t;
  }
  std::unique_ptr<nn::Backend> be;
  std::unique_ptr<nn::InferenceOps> ops;
};

std::vector<double> random_values(std::size_t n, std::uint64_t start, double scale = 1.0) {
  nn::Rng rng{start};
  std::vector<double> v(n);
  for (double& x : v) x = scale * (2.0 * rng.uniform() - 1.0);
  return v;
}

double max_abs_diff(std::vector<double> const& a, std::vector<double> const& b) {
  REQUIRE(a.size() == b.size());
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

/// Multi-head attention written directly from the definition, in double:
/// q [batch, L, D], k and v [batch, S, D], heads of D / heads channels.
std::vector<double> naive_attention(std::vector<double> const& q, std::vector<double> const& k,
                                    std::vector<double> const& v, int batch, int l, int s, int d,
                                    int heads) {
  int const dh = d / heads;
  std::vector<double> out(static_cast<std::size_t>(batch * l * d));
  auto at = [d](int n, int t, int len, int c) {
    return static_cast<std::size_t>((n * len + t) * d + c);
  };
  for (int n = 0; n < batch; ++n) {
    for (int h = 0; h < heads; ++h) {
      for (int i = 0; i < l; ++i) {
        std::vector<double> w(static_cast<std::size_t>(s));
        double m = -std::numeric_limits<double>::infinity();
        for (int j = 0; j < s; ++j) {
          double dot = 0;
          for (int c = 0; c < dh; ++c)
            dot += q[at(n, i, l, h * dh + c)] * k[at(n, j, s, h * dh + c)];
          w[static_cast<std::size_t>(j)] = dot / std::sqrt(static_cast<double>(dh));
          m = std::max(m, w[static_cast<std::size_t>(j)]);
        }
        double sum = 0;
        for (double& x : w) sum += (x = std::exp(x - m));
        for (int c = 0; c < dh; ++c) {
          double acc = 0;
          for (int j = 0; j < s; ++j)
            acc += w[static_cast<std::size_t>(j)] / sum * v[at(n, j, s, h * dh + c)];
          out[at(n, i, l, h * dh + c)] = acc;
        }
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("attention: the composed InferenceOps match multi-head attention from the definition") {
  int const batch = 2, l = 5, s = 7, d = 12, heads = 3;
  auto const q = random_values(static_cast<std::size_t>(batch * l * d), 1, 2.0);
  auto const k = random_values(static_cast<std::size_t>(batch * s * d), 2, 2.0);
  auto const v = random_values(static_cast<std::size_t>(batch * s * d), 3);
  auto const want = naive_attention(q, k, v, batch, l, s, d, heads);
  for (auto [type, tolerance] :
       {std::pair{nn::DType::f32, 2e-6}, std::pair{nn::DType::f64, 1e-12}}) {
    Cpu cpu{type};
    Tensor const tq = cpu.make(Shape{batch * l, d, 1, 1}, q);
    Tensor const tk = cpu.make(Shape{batch * s, d, 1, 1}, k);
    Tensor const tv = cpu.make(Shape{batch * s, d, 1, 1}, v);
    detr::Context cx{*cpu.be, *cpu.ops, batch};
    detr::AttentionWorkspace ws;
    Tensor const& out = detr::scaled_dot_product_attention(cx, tq, tk, tv, heads, ws);
    CHECK(out.shape() == Shape{batch * l, d, 1, 1});
    CHECK(max_abs_diff(cpu.be->read(out), want) < tolerance);
  }
  SECTION("one head equals plain softmax(q k^T / sqrt(d)) v; mismatched shapes are rejected") {
    Cpu cpu;
    detr::Context cx{*cpu.be, *cpu.ops, 1};
    detr::AttentionWorkspace ws;
    Tensor const tq = cpu.make(Shape{3, 4, 1, 1}, random_values(12, 7));
    Tensor const tk = cpu.make(Shape{5, 4, 1, 1}, random_values(20, 8));
    Tensor const tv = cpu.make(Shape{5, 4, 1, 1}, random_values(20, 9));
    auto const want1 =
        naive_attention(cpu.be->read(tq), cpu.be->read(tk), cpu.be->read(tv), 1, 3, 5, 4, 1);
    CHECK(max_abs_diff(cpu.be->read(detr::scaled_dot_product_attention(cx, tq, tk, tv, 1, ws)),
                       want1) < 2e-6);
    CHECK_THROWS_WITH(detr::scaled_dot_product_attention(cx, tq, tk, tv, 3, ws),
                      Catch::Contains("do not fit batch 1 and 3 heads"));
    Tensor const bad_v = cpu.make(Shape{4, 4, 1, 1}, random_values(16, 10));
    CHECK_THROWS_AS(detr::scaled_dot_product_attention(cx, tq, tk, bad_v, 1, ws),
                    std::invalid_argument);
  }
}

TEST_CASE("layer_norm: (x + residual) normalized per row, then gamma and beta") {
  Cpu cpu;
  int const rows = 4, cols = 16;
  auto const x = random_values(rows * cols, 11, 3.0);
  auto const r = random_values(rows * cols, 12);
  auto const g = random_values(cols, 13);
  auto const b = random_values(cols, 14);
  Tensor const tx = cpu.make(Shape{rows, cols, 1, 1}, x);
  Tensor const tr = cpu.make(Shape{rows, cols, 1, 1}, r);
  Tensor const tg = cpu.make(Shape{cols, 1, 1, 1}, g);
  Tensor const tb = cpu.make(Shape{cols, 1, 1, 1}, b);
  Tensor y = cpu.be->empty(Shape{rows, cols, 1, 1}, Layout::nchw);
  cpu.ops->layer_norm(tx, &tr, tg, tb, 1e-5, y);
  std::vector<double> want(x.size());
  for (int i = 0; i < rows; ++i) {
    double mean = 0, var = 0;
    for (int j = 0; j < cols; ++j)
      mean += x[static_cast<std::size_t>(i * cols + j)] + r[static_cast<std::size_t>(i * cols + j)];
    mean /= cols;
    for (int j = 0; j < cols; ++j) {
      double const dv = x[static_cast<std::size_t>(i * cols + j)] +
                        r[static_cast<std::size_t>(i * cols + j)] - mean;
      var += dv * dv;
    }
    var /= cols;
    for (int j = 0; j < cols; ++j) {
      auto const e = static_cast<std::size_t>(i * cols + j);
      want[e] = (x[e] + r[e] - mean) / std::sqrt(var + 1e-5) * g[static_cast<std::size_t>(j)] +
                b[static_cast<std::size_t>(j)];
    }
  }
  CHECK(max_abs_diff(cpu.be->read(y), want) < 1e-5);

  SECTION("gamma 1, beta 0: every row has mean 0 and variance 1; a constant row stays finite") {
    std::vector<double> x2 = x;
    for (int j = 0; j < cols; ++j) x2[static_cast<std::size_t>(j)] = 5.0;  // row 0 constant
    Tensor const tx2 = cpu.make(Shape{rows, cols, 1, 1}, x2);
    Tensor const ones = cpu.make(Shape{cols, 1, 1, 1}, std::vector<double>(cols, 1.0));
    Tensor const zeros = cpu.make(Shape{cols, 1, 1, 1}, std::vector<double>(cols, 0.0));
    cpu.ops->layer_norm(tx2, nullptr, ones, zeros, 1e-5, y);
    auto const out = cpu.be->read(y);
    for (int j = 0; j < cols; ++j) CHECK(out[static_cast<std::size_t>(j)] == 0.0);
    for (int i = 1; i < rows; ++i) {
      double mean = 0, var = 0;
      for (int j = 0; j < cols; ++j) mean += out[static_cast<std::size_t>(i * cols + j)];
      mean /= cols;
      for (int j = 0; j < cols; ++j) {
        var += (out[static_cast<std::size_t>(i * cols + j)] - mean) *
               (out[static_cast<std::size_t>(i * cols + j)] - mean);
      }
      CHECK(std::abs(mean) < 1e-6);
      CHECK(std::abs(var / cols - 1.0) < 1e-3);
    }
  }
  SECTION("bad arguments name the problem") {
    Tensor const short_g = cpu.make(Shape{cols - 1, 1, 1, 1}, std::vector<double>(cols - 1, 1.0));
    CHECK_THROWS_WITH(cpu.ops->layer_norm(tx, nullptr, short_g, tb, 1e-5, y),
                      Catch::Contains("gamma and beta need 16 elements"));
    CHECK_THROWS_WITH(cpu.ops->layer_norm(tx, nullptr, tg, tb, 0.0, y),
                      Catch::Contains("eps must be positive"));
  }
}

TEST_CASE("softmax_rows: rows sum to 1, match exp(x)/sum, survive large inputs, work in place") {
  Cpu cpu;
  auto const x = random_values(3 * 10, 21, 4.0);
  Tensor t = cpu.make(Shape{3, 10, 1, 1}, x);
  Tensor y = cpu.be->empty(Shape{3, 10, 1, 1}, Layout::nchw);
  cpu.ops->softmax_rows(t, y);
  auto const out = cpu.be->read(y);
  for (int i = 0; i < 3; ++i) {
    double sum = 0, ref = 0;
    for (int j = 0; j < 10; ++j) ref += std::exp(x[static_cast<std::size_t>(i * 10 + j)]);
    for (int j = 0; j < 10; ++j) {
      auto const e = static_cast<std::size_t>(i * 10 + j);
      CHECK(out[e] == Approx(std::exp(x[e]) / ref).epsilon(1e-6));
      sum += out[e];
    }
    CHECK(sum == Approx(1.0).epsilon(1e-6));
  }
  // exp(1000) overflows; the max-subtracted form does not.
  Tensor big = cpu.make(Shape{1, 2, 1, 1}, {1000.0, 1001.0});
  cpu.ops->softmax_rows(big, big);  // in place
  auto const b = cpu.be->read(big);
  CHECK(b[0] == Approx(1.0 / (1.0 + std::exp(1.0))).epsilon(1e-6));
  CHECK(b[1] == Approx(std::exp(1.0) / (1.0 + std::exp(1.0))).epsilon(1e-6));
  Tensor wrong = cpu.be->empty(Shape{3, 9, 1, 1}, Layout::nchw);
  CHECK_THROWS_WITH(cpu.ops->softmax_rows(t, wrong), Catch::Contains("y is 3x9, x is 3x10"));
}

TEST_CASE("bias_act: bias per column, optional residual, then the activation") {
  Cpu cpu;
  std::vector<double> const y0{-2.0, -0.5, 0.5, 2.0, 1.0, -1.0};  // 3 rows x 2 columns
  std::vector<double> const bias{0.25, -0.25};
  std::vector<double> const res{1, 2, 3, 4, 5, 6};
  Tensor const tb = cpu.make(Shape{2, 1, 1, 1}, bias);
  Tensor const tr = cpu.make(Shape{3, 2, 1, 1}, res);
  for (auto act : {nn::Activation::none, nn::Activation::relu, nn::Activation::sigmoid}) {
    for (bool with_residual : {false, true}) {
      Tensor y = cpu.make(Shape{3, 2, 1, 1}, y0);
      cpu.ops->bias_act(y, tb, with_residual ? &tr : nullptr, act);
      auto const out = cpu.be->read(y);
      for (std::size_t i = 0; i < y0.size(); ++i) {
        double v = y0[i] + bias[i % 2] + (with_residual ? res[i] : 0.0);
        if (act == nn::Activation::relu) v = std::max(v, 0.0);
        if (act == nn::Activation::sigmoid) v = 1.0 / (1.0 + std::exp(-v));
        CHECK(out[i] == Approx(v).epsilon(1e-6));
      }
    }
  }
  SECTION("an NHWC feature map takes the bias per channel; NCHW is rejected") {
    // NHWC [1, 2, 1, 2]: memory is pixel-major, channel last.
    Tensor map = cpu.make(Shape{1, 2, 1, 2}, {1, 10, 2, 20}, Layout::nhwc);
    cpu.ops->bias_act(map, tb, nullptr, nn::Activation::none);
    CHECK(cpu.be->read(map) == std::vector<double>{1.25, 9.75, 2.25, 19.75});
    Tensor nchw = cpu.make(Shape{1, 2, 1, 2}, {1, 2, 10, 20}, Layout::nchw);
    CHECK_THROWS_WITH(cpu.ops->bias_act(nchw, tb, nullptr, nn::Activation::none),
                      Catch::Contains("needs NHWC"));
    Tensor const wrong_bias = cpu.make(Shape{3, 1, 1, 1}, {1, 2, 3});
    Tensor y = cpu.make(Shape{3, 2, 1, 1}, y0);
    CHECK_THROWS_WITH(cpu.ops->bias_act(y, wrong_bias, nullptr, nn::Activation::none),
                      Catch::Contains("bias has 3 elements"));
  }
}

TEST_CASE("add_repeat: a positional table added to every image of a token batch") {
  Cpu cpu;
  Tensor const a = cpu.make(Shape{4, 2, 1, 1}, {0, 0, 1, 1, 2, 2, 3, 3});  // 2 images x 2 tokens
  Tensor const pos = cpu.make(Shape{2, 2, 1, 1}, {10, 20, 30, 40});
  Tensor y = cpu.be->empty(Shape{4, 2, 1, 1}, Layout::nchw);
  cpu.ops->add_repeat(a, pos, y);
  CHECK(cpu.be->read(y) == std::vector<double>{10, 20, 31, 41, 12, 22, 33, 43});
  Tensor const pos3 = cpu.make(Shape{3, 2, 1, 1}, {1, 2, 3, 4, 5, 6});
  CHECK_THROWS_WITH(cpu.ops->add_repeat(a, pos3, y),
                    Catch::Contains("cannot repeat b (3x2) over a (4x2)"));
}

TEST_CASE("split_heads and merge_heads: head h of image b is entry b*heads+h, merge inverts") {
  Cpu cpu;
  int const batch = 2, seq = 3, heads = 2, dh = 2;
  std::vector<double> x(static_cast<std::size_t>(batch * seq * heads * dh));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i);
  Tensor const tx = cpu.make(Shape{batch * seq, heads * dh, 1, 1}, x);
  Tensor per = cpu.be->empty(Shape{batch * heads * seq, dh, 1, 1}, Layout::nchw);
  cpu.ops->split_heads(tx, batch, heads, per);
  auto const p = cpu.be->read(per);
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads; ++h)
      for (int t = 0; t < seq; ++t)
        for (int j = 0; j < dh; ++j) {
          CHECK(p[static_cast<std::size_t>(((b * heads + h) * seq + t) * dh + j)] ==
                x[static_cast<std::size_t>((b * seq + t) * heads * dh + h * dh + j)]);
        }
  Tensor back = cpu.be->empty(Shape{batch * seq, heads * dh, 1, 1}, Layout::nchw);
  cpu.ops->merge_heads(per, batch, heads, back);
  CHECK(cpu.be->read(back) == x);
  CHECK_THROWS_WITH(cpu.ops->split_heads(tx, batch, 3, per), Catch::Contains("do not split into"));
}

TEST_CASE("batched_gemm: every transpose combination against the definition") {
  Cpu cpu;
  int const batch = 3, m = 2, n = 4, k = 5;
  auto const a = random_values(static_cast<std::size_t>(batch * m * k), 31);
  auto const b = random_values(static_cast<std::size_t>(batch * k * n), 32);
  auto const c0 = random_values(static_cast<std::size_t>(batch * m * n), 33);
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Tensor const A = cpu.make(Shape{batch * (ta ? k : m), ta ? m : k, 1, 1}, a);
      Tensor const B = cpu.make(Shape{batch * (tb ? n : k), tb ? k : n, 1, 1}, b);
      Tensor C = cpu.make(Shape{batch * m, n, 1, 1}, c0);
      cpu.ops->batched_gemm(ta, tb, batch, m, n, k, 0.5, A, B, 2.0, C);
      std::vector<double> want(c0.size());
      for (int e = 0; e < batch; ++e)
        for (int i = 0; i < m; ++i)
          for (int j = 0; j < n; ++j) {
            double acc = 0;
            for (int p = 0; p < k; ++p) {
              double const av =
                  a[static_cast<std::size_t>(e * m * k + (ta ? p * m + i : i * k + p))];
              double const bv =
                  b[static_cast<std::size_t>(e * k * n + (tb ? j * k + p : p * n + j))];
              acc += av * bv;
            }
            auto const o = static_cast<std::size_t>(e * m * n + i * n + j);
            want[o] = 0.5 * acc + 2.0 * c0[o];
          }
      INFO("ta=" << ta << " tb=" << tb);
      CHECK(max_abs_diff(cpu.be->read(C), want) < 1e-5);
    }
  }
  Tensor const A = cpu.make(Shape{batch * m, k, 1, 1}, a);
  Tensor const B = cpu.make(Shape{batch * k, n, 1, 1}, b);
  Tensor C = cpu.make(Shape{batch * m, n, 1, 1}, c0);
  CHECK_THROWS_WITH(cpu.ops->batched_gemm(false, false, batch, m, n, k + 1, 1.0, A, B, 0.0, C),
                    Catch::Contains("need"));
}

TEST_CASE("max_pool2d: 3x3 stride 2 pad 1 in NCHW and NHWC against the definition") {
  Cpu cpu;
  Shape const xs{2, 3, 5, 6};
  auto const logical = random_values(xs.numel(), 41);  // in NCHW order
  Shape const ys = nn::pool_output_shape(xs, nn::PoolGeometry{});
  CHECK(ys == Shape{2, 3, 3, 3});
  for (Layout layout : {Layout::nchw, Layout::nhwc}) {
    std::vector<double> stored(logical.size());
    nn::Strides const sx = nn::strides_of(xs, layout);
    nn::Strides const sl = nn::strides_of(xs, Layout::nchw);
    for (int n = 0; n < xs.n; ++n)
      for (int c = 0; c < xs.c; ++c)
        for (int h = 0; h < xs.h; ++h)
          for (int w = 0; w < xs.w; ++w)
            stored[nn::offset_of(sx, n, c, h, w)] = logical[nn::offset_of(sl, n, c, h, w)];
    Tensor const x = cpu.make(xs, stored, layout);
    Tensor y = cpu.be->empty(ys, layout);
    cpu.ops->max_pool2d(x, nn::PoolGeometry{}, y);
    auto const out = cpu.be->read(y);
    nn::Strides const sy = nn::strides_of(ys, layout);
    for (int n = 0; n < ys.n; ++n)
      for (int c = 0; c < ys.c; ++c)
        for (int oh = 0; oh < ys.h; ++oh)
          for (int ow = 0; ow < ys.w; ++ow) {
            double best = -std::numeric_limits<double>::infinity();
            for (int r = -1; r <= 1; ++r)
              for (int s = -1; s <= 1; ++s) {
                int const ih = 2 * oh + r, iw = 2 * ow + s;
                if (ih >= 0 && ih < xs.h && iw >= 0 && iw < xs.w) {
                  best = std::max(best, logical[nn::offset_of(sl, n, c, ih, iw)]);
                }
              }
            CHECK(out[nn::offset_of(sy, n, c, oh, ow)] == Approx(best).epsilon(1e-7));
          }
  }
  CHECK_THROWS_WITH(nn::pool_output_shape(Shape{1, 1, 1, 1}, nn::PoolGeometry{5, 1, 0}),
                    Catch::Contains("smaller than the 5x5 window"));
}

TEST_CASE("cxcywh_to_xyxy: relative centre boxes become pixel corners, clamped to the image") {
  auto const b = detr::cxcywh_to_xyxy({0.5F, 0.25F, 0.5F, 0.25F}, 200.0F, 100.0F);
  CHECK(b == std::array<float, 4>{50.0F, 12.5F, 150.0F, 37.5F});
  auto const edge = detr::cxcywh_to_xyxy({0.9F, 0.1F, 0.4F, 0.4F}, 100.0F, 100.0F);
  CHECK(edge[0] == Approx(70.0F));
  CHECK(edge[1] == 0.0F);    // 10 - 20 clamped
  CHECK(edge[2] == 100.0F);  // 110 clamped
  CHECK(edge[3] == Approx(30.0F));
}

TEST_CASE("top_k: largest first, ties in index order, NaN last, k clamped, k = 0 rejected") {
  std::vector<float> const s{0.1F, 0.9F, 0.5F, 0.9F, std::nanf(""), 0.7F};
  CHECK(detr::top_k(s, 3) == std::vector<std::size_t>{1, 3, 5});
  CHECK(detr::top_k(s, 100) == std::vector<std::size_t>{1, 3, 5, 2, 0, 4});
  CHECK(detr::top_k({}, 2).empty());
  CHECK_THROWS_WITH(detr::top_k(s, 0), Catch::Contains("k must be at least 1"));
}

TEST_CASE(
    "postprocess: best real class per query by softmax, the k best queries, boxes in pixels") {
  // 1 image, 3 queries, 2 classes + "no object".
  std::vector<float> const logits{
      0.0F, 2.0F, 0.0F,   // query 0: class 1, p = e^2 / (e^2 + 2)
      0.0F, 0.0F, 5.0F,   // query 1: mostly "no object"; best real class 0 (tie, first)
      3.0F, 0.0F, 0.0F};  // query 2: class 0, p = e^3 / (e^3 + 2)
  std::vector<float> const boxes{0.5F, 0.5F, 0.2F,  0.2F,  0.1F, 0.1F,
                                 0.1F, 0.1F, 0.25F, 0.75F, 0.5F, 0.5F};
  auto const out = detr::postprocess(logits, boxes, 1, 3, 3, 2, 100.0F, 100.0F);
  REQUIRE(out.size() == 1);
  REQUIRE(out[0].size() == 2);
  CHECK(out[0][0].query == 2);
  CHECK(out[0][0].label == 0);
  CHECK(out[0][0].score == Approx(std::exp(3.0) / (std::exp(3.0) + 2.0)));
  CHECK(out[0][0].box == std::array<float, 4>{0.0F, 50.0F, 50.0F, 100.0F});
  CHECK(out[0][1].query == 0);
  CHECK(out[0][1].label == 1);
  CHECK(out[0][1].score == Approx(std::exp(2.0) / (std::exp(2.0) + 2.0)));
  CHECK_THROWS_WITH(detr::postprocess(logits, boxes, 1, 4, 3, 2, 1.0F, 1.0F),
                    Catch::Contains("logits hold 9 values, expected 12"));
  CHECK_THROWS_WITH(detr::postprocess(logits, boxes, 1, 3, 3, 0, 1.0F, 1.0F),
                    Catch::Contains("k must be at least 1"));
}

TEST_CASE("summarize: nearest-rank percentiles of latencies") {
  std::vector<double> v;
  for (int i = 20; i >= 1; --i) v.push_back(i);
  auto const s = detr::summarize(v);
  CHECK(s.count == 20);
  CHECK(s.p50 == 10.0);
  CHECK(s.p95 == 19.0);
  CHECK(s.min == 1.0);
  CHECK(s.max == 20.0);
  CHECK(s.mean == 10.5);
  CHECK(detr::summarize({7.0}).p95 == 7.0);
  CHECK(detr::summarize({}).count == 0);
}

namespace {
std::optional<detr::Options> parse(std::vector<char const*> args) {
  args.insert(args.begin(), "detr_inference");
  return detr::parse_options(static_cast<int>(args.size()), args.data());
}
}  // namespace

TEST_CASE("options: defaults per device, and clear errors") {
  auto o = parse({});
  REQUIRE(o);
  detr::Options cpu = *o;
  detr::resolve(cpu, false);
  CHECK(cpu.model == "tiny");
  CHECK(cpu.batch == 2);
  CHECK(cpu.image_size == 128);
  detr::Options gpu = *o;
  detr::resolve(gpu, true);
  CHECK(gpu.model == "base");
  CHECK(gpu.batch == 8);
  CHECK(gpu.image_size == 640);
  CHECK(gpu.warmup == 10);

  auto given = parse({"--batch", "3", "--image-size=96", "--dec-layers", "2", "--precision", "tf32",
                      "--report", "json=out.json,table", "--quiet"});
  REQUIRE(given);
  CHECK(given->batch == 3);
  CHECK(given->image_size == 96);
  CHECK(given->dec_layers == 2);
  CHECK(given->quiet);
  CHECK(given->report == "json=out.json,table");

  CHECK_THROWS_WITH(parse({"--image-size", "100"}), Catch::Contains("not a multiple of 32"));
  CHECK_THROWS_WITH(parse({"--batch", "0"}), Catch::Contains("--batch: 0 is outside [1, 1024]"));
  CHECK_THROWS_WITH(parse({"--device", "tpu"}), Catch::Contains("is not one of cpu|cuda|auto"));
  CHECK_THROWS_WITH(parse({"--report", "tabel"}), Catch::Contains("unknown item 'tabel'"));
  CHECK_THROWS_WITH(parse({"--frobnicate"}), Catch::Contains("unknown option --frobnicate"));
  CHECK_THROWS_AS(parse({"--iterations"}), nn::UsageError);

  for (char const* p : {"fp16", "bf16"}) {
    auto half = parse({"--precision", p});
    REQUIRE(half);
    CHECK_THROWS_WITH(detr::resolve(*half, true), Catch::Contains("not supported"));
  }
  CHECK_THROWS_WITH(detr::resolve(*given, false), Catch::Contains("tf32 needs the GPU"));

  auto graph = parse({"--cuda-graph"});
  REQUIRE(graph);
  CHECK(graph->cuda_graph);
  CHECK_FALSE(o->cuda_graph);
  detr::Options graph_gpu = *graph;
  CHECK_NOTHROW(detr::resolve(graph_gpu, true));
  CHECK_THROWS_WITH(detr::resolve(*graph, false), Catch::Contains("--cuda-graph needs the GPU"));
}

TEST_CASE("the CUDA-graph output check: identical bit for bit, else the first difference") {
  std::vector<double> const a{1.0, -2.5, 0.0, 3.25};
  CHECK(detr::first_mismatch("logits", a, a).empty());
  std::vector<double> b = a;
  b[2] = -0.0;  // equal as numbers, not bit for bit: a replay computes the very same bits
  CHECK(detr::first_mismatch("logits", a, b) == "logits[2]: eager 0, graph -0");
  b = a;
  b[3] = std::nextafter(3.25, 4.0);
  CHECK_THAT(detr::first_mismatch("boxes", a, b), Catch::StartsWith("boxes[3]: eager 3.25"));
  double const nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> const n1{nan, 1.0};
  CHECK(detr::first_mismatch("boxes", n1, n1).empty());  // the same NaN bits
  std::vector<double> const n2{1.0, nan};
  CHECK(detr::first_mismatch("boxes", std::vector<double>{1.0, 1.0}, n2) ==
        "boxes[1]: eager 1, graph nan");
  CHECK(detr::first_mismatch("logits", a, std::vector<double>{1.0}) ==
        "logits: 4 eager values, 1 from the graph");
  // No graphs on the CPU backend.
  Cpu cpu;
  detr::Detr model{*cpu.be, detr::ModelConfig::tiny()};
  CHECK_THROWS_AS(detr::make_graph_forward(*cpu.be, *cpu.ops, model), std::runtime_error);
}

namespace {
detr::ModelConfig small_config() {
  detr::ModelConfig c = detr::ModelConfig::tiny();
  c.enc_layers = 2;
  c.dec_layers = 3;
  c.queries = 10;
  c.num_classes = 5;
  return c;
}

Tensor images(Cpu& cpu, int batch, int size, std::uint64_t start) {
  return cpu.make(Shape{batch, 3, size, size},
                  random_values(static_cast<std::size_t>(batch * 3 * size * size), start),
                  Layout::nhwc);
}
}  // namespace

TEST_CASE("model: shapes, finite outputs, determinism, and bad inputs") {
  Cpu cpu;
  detr::Detr model{*cpu.be, small_config()};
  Tensor const x = images(cpu, 2, 64, 51);
  detr::DetrOutput const out = model.forward(*cpu.be, *cpu.ops, x);
  CHECK(out.logits.shape() == Shape{2 * 10, 6, 1, 1});
  CHECK(out.boxes.shape() == Shape{2 * 10, 4, 1, 1});
  auto const logits = cpu.be->read(out.logits);
  auto const boxes = cpu.be->read(out.boxes);
  for (double v : logits) REQUIRE(std::isfinite(v));
  for (double v : boxes) REQUIRE((v > 0.0 && v < 1.0));  // sigmoid
  // Queries must not all collapse to one answer.
  CHECK(std::set<double>(logits.begin(), logits.end()).size() > 50);

  // Same rng_start, another model object: identical outputs; another rng_start: different ones.
  detr::Detr twin{*cpu.be, small_config()};
  CHECK(cpu.be->read(twin.forward(*cpu.be, *cpu.ops, x).logits) == logits);
  detr::ModelConfig other = small_config();
  other.rng_start += 1;
  detr::Detr different{*cpu.be, other};
  CHECK(cpu.be->read(different.forward(*cpu.be, *cpu.ops, x).logits) != logits);
  // A second forward of the same model reuses its buffers and gives the same result.
  CHECK(cpu.be->read(model.forward(*cpu.be, *cpu.ops, x).logits) == logits);
  // The images of a batch are independent: image 1 alone gives image 1's rows.
  auto const pixels = cpu.be->read(x);
  Tensor const one =
      cpu.make(Shape{1, 3, 64, 64}, std::vector<double>(pixels.begin() + 3 * 64 * 64, pixels.end()),
               Layout::nhwc);
  auto const single = cpu.be->read(model.forward(*cpu.be, *cpu.ops, one).logits);
  CHECK(max_abs_diff(single, std::vector<double>(logits.begin() + 10 * 6, logits.end())) < 1e-4);

  Tensor const nchw = cpu.make(Shape{1, 3, 64, 64}, random_values(3 * 64 * 64, 1), Layout::nchw);
  CHECK_THROWS_WITH(model.forward(*cpu.be, *cpu.ops, nchw), Catch::Contains("must be NHWC"));
  Tensor const odd = images(cpu, 1, 48, 2);
  CHECK_THROWS_WITH(model.forward(*cpu.be, *cpu.ops, odd), Catch::Contains("multiples of 32"));
  detr::ModelConfig bad = small_config();
  bad.heads = 5;
  CHECK_THROWS_WITH(detr::Detr(*cpu.be, bad), Catch::Contains("not divisible by 5 heads"));
}

TEST_CASE("model: every module runs in a module scope with its full path") {
  Cpu cpu;
  detr::Detr model{*cpu.be, small_config()};
  Tensor const x = images(cpu, 1, 64, 61);
  std::mutex m;
  std::set<std::string> paths;
  auto hook = nsightkit::add_pre_hook([&](nsightkit::ModuleInfo const& info) {
    std::lock_guard<std::mutex> lock{m};
    paths.emplace(info.path);
  });
  (void)model.forward(*cpu.be, *cpu.ops, x);
  hook.remove();
  if constexpr (!nsightkit::enabled) {
    CHECK(paths.empty());  // NSIGHTKIT_DISABLE: no hook ever runs
    return;
  }
  for (char const* p : {"backbone",
                        "backbone/stem/conv",
                        "backbone/stem/pool",
                        "backbone/stage1/block0/conv1",
                        "backbone/stage2/block0/downsample",
                        "backbone/stage3/block1",
                        "backbone/stage3/block1/conv2",
                        "backbone/stage4/block1/conv1",
                        "encoder/input_proj",
                        "encoder/layer0/self_attn",
                        "encoder/layer0/self_attn/q_proj",
                        "encoder/layer0/self_attn/sdpa",
                        "encoder/layer0/self_attn/out_proj",
                        "encoder/layer1/ffn/linear2",
                        "encoder/layer1/norm2",
                        "decoder/layer0/self_attn",
                        "decoder/layer2/cross_attn",
                        "decoder/layer2/cross_attn/sdpa",
                        "decoder/layer2/norm3",
                        "decoder/norm",
                        "heads/class_head",
                        "heads/box_head/fc2"}) {
    INFO(p);
    CHECK(paths.count(p) == 1);
  }
  CHECK(paths.count("backbone/stage1/block0/downsample") == 0);  // same shape: no downsample
  CHECK(paths.count("encoder/layer2") == 0);
  CHECK(paths.count("decoder/layer3") == 0);
  // The count is fixed by the architecture: backbone 1 + stem 3 + 4 stages + 8 blocks x 3 + 3
  // downsamples; encoder 1 + input_proj + 2 layers x 12; decoder 1 + norm + 3 layers x 19;
  // heads 1 + class_head + box_head + 3 fc.
  CHECK(paths.size() == 1 + 3 + 4 + 8 * 3 + 3 + (2 + 2 * 12) + (2 + 3 * 19) + 6);
}

TEST_CASE("sine_position_table: DETR's normalized sine/cosine encoding") {
  auto const t = detr::sine_position_table(2, 3, 8);
  REQUIRE(t.size() == 2 * 3 * 8);
  for (double v : t) CHECK(std::abs(v) <= 1.0);
  double const ey = 1.0 / (2.0 + 1e-6) * 6.283185307179586;  // row 0
  double const ex = 2.0 / (3.0 + 1e-6) * 6.283185307179586;  // column 1
  std::size_t const row = (0 * 3 + 1) * 8;
  CHECK(t[row + 0] == Approx(std::sin(ey)));
  CHECK(t[row + 1] == Approx(std::cos(ey)));
  CHECK(t[row + 2] == Approx(std::sin(ey / std::pow(10000.0, 2.0 / 4.0))));
  CHECK(t[row + 4] == Approx(std::sin(ex)));
  CHECK(t[row + 5] == Approx(std::cos(ex)));
  CHECK_THROWS_AS(detr::sine_position_table(2, 2, 7), std::invalid_argument);
}
