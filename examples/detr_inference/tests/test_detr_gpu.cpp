// GPU/CPU agreement of the DETR example (needs a CUDA device; skipped, exit 77, without one).
// Every nn::InferenceOps operation and the whole model run on the CUDA backend and on the CPU
// backend from the same inputs and weights; results must agree within stated tolerances.
//
// Tolerances. Both sides compute in fp32 (the CUDA backend with TF32 off: FP32 FMA math, cuDNN
// algorithms without tensor-op math); they differ in summation order and in the convolution
// algorithm cuDNN picks (FFT/Winograd round differently), about 1e-7..1e-5 relative per
// operation. For this model (tiny preset, 2 encoder and 3 decoder layers, 64x64 images) the
// CPU in fp32 differs from the CPU in fp64 by 1.9e-6 on logits (range about [-3, 2.3]) and
// 4e-7 on boxes (range [0.38, 0.80]), measured on the development machine; this test prints
// the same measurement next to the GPU's difference. The GPU is allowed 1e-3 absolute on
// logits and 5e-4 on boxes: ~500x the fp32 rounding of the model, ~1000x below the order-1
// differences an indexing, layout or synchronization bug produces.
#include "model.hpp"

#include "common/cpu_backend.hpp"
#include "common/cuda_backend.hpp"
#include "common/inference_ops.hpp"
#include "common/rng.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

namespace {

using nn::Layout;
using nn::Shape;
using nn::Tensor;

struct Side {
  std::unique_ptr<nn::Backend> be;
  std::unique_ptr<nn::InferenceOps> ops;
  Tensor make(Shape s, std::vector<double> const& v, Layout l = Layout::nchw) {
    Tensor t = be->empty(s, l);
    be->write(t, v);
    return t;
  }
};

Side cpu_side(nn::DType t = nn::DType::f32) {
  Side s;
  s.be = nn::make_cpu_backend(t);
  s.ops = nn::make_inference_ops(*s.be);
  return s;
}

Side gpu_side(bool tf32 = false) {
  Side s;
  nn::CudaBackendOptions o;
  o.tf32 = tf32;
  s.be = nn::make_cuda_backend(o);
  nn::InferenceOpsOptions io;
  io.tf32 = tf32;
  s.ops = nn::make_inference_ops(*s.be, io);
  return s;
}

std::vector<double> random_values(std::size_t n, std::uint64_t start, double scale = 1.0) {
  nn::Rng rng{start};
  std::vector<double> v(n);
  for (double& x : v) x = scale * (2.0 * rng.uniform() - 1.0);
  return v;
}

double max_abs_diff(std::vector<double> const& a, std::vector<double> const& b) {
  REQUIRE(a.size() == b.size());
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    REQUIRE(std::isfinite(a[i]));
    REQUIRE(std::isfinite(b[i]));
    m = std::max(m, std::abs(a[i] - b[i]));
  }
  return m;
}

detr::ModelConfig small_config() {
  detr::ModelConfig c = detr::ModelConfig::tiny();
  c.enc_layers = 2;
  c.dec_layers = 3;
  c.queries = 20;
  return c;
}

struct Outputs {
  std::vector<double> logits, boxes;
};

Outputs run_model(Side& s, detr::ModelConfig const& c, std::vector<double> const& pixels, int batch,
                  int size) {
  detr::Detr model{*s.be, c};
  Tensor const x = s.make(Shape{batch, 3, size, size}, pixels, Layout::nhwc);
  detr::DetrOutput const out = model.forward(*s.be, *s.ops, x);
  return Outputs{s.be->read(out.logits), s.be->read(out.boxes)};
}

}  // namespace

TEST_CASE("InferenceOps: CUDA and CPU agree on every operation") {
  Side cpu = cpu_side();
  Side gpu = gpu_side();
  auto both = [&](Shape s, std::vector<double> const& v, Layout l = Layout::nchw) {
    return std::pair{cpu.make(s, v, l), gpu.make(s, v, l)};
  };
  auto agree = [&](Tensor const& c, Tensor const& g, double tol) {
    CHECK(max_abs_diff(cpu.be->read(c), gpu.be->read(g)) <= tol);
  };

  SECTION("bias_act with residual, every activation; NHWC feature map") {
    for (auto act : {nn::Activation::none, nn::Activation::relu, nn::Activation::sigmoid}) {
      auto [yc, yg] = both(Shape{2, 24, 5, 7}, random_values(2 * 24 * 35, 1, 3.0), Layout::nhwc);
      auto [bc, bg] = both(Shape{24, 1, 1, 1}, random_values(24, 2));
      auto [rc, rg] = both(Shape{2, 24, 5, 7}, random_values(2 * 24 * 35, 3), Layout::nhwc);
      cpu.ops->bias_act(yc, bc, &rc, act);
      gpu.ops->bias_act(yg, bg, &rg, act);
      agree(yc, yg, 1e-6);
    }
  }
  SECTION("add_repeat") {
    auto [ac, ag] = both(Shape{3 * 50, 64, 1, 1}, random_values(3 * 50 * 64, 4));
    auto [pc, pg] = both(Shape{50, 64, 1, 1}, random_values(50 * 64, 5));
    Tensor yc = cpu.be->empty(ac.shape(), Layout::nchw),
           yg = gpu.be->empty(ag.shape(), Layout::nchw);
    cpu.ops->add_repeat(ac, pc, yc);
    gpu.ops->add_repeat(ag, pg, yg);
    agree(yc, yg, 1e-6);
  }
  SECTION("layer_norm with residual, rows of 256 and of 37 (not a multiple of a warp)") {
    for (int cols : {256, 37}) {
      auto [xc, xg] =
          both(Shape{300, cols, 1, 1}, random_values(300 * static_cast<std::size_t>(cols), 6, 4.0));
      auto [rc, rg] =
          both(Shape{300, cols, 1, 1}, random_values(300 * static_cast<std::size_t>(cols), 7));
      auto [gc, gg] = both(Shape{cols, 1, 1, 1}, random_values(static_cast<std::size_t>(cols), 8));
      auto [bc, bg] = both(Shape{cols, 1, 1, 1}, random_values(static_cast<std::size_t>(cols), 9));
      Tensor yc = cpu.be->empty(xc.shape(), Layout::nchw),
             yg = gpu.be->empty(xg.shape(), Layout::nchw);
      cpu.ops->layer_norm(xc, &rc, gc, bc, 1e-5, yc);
      gpu.ops->layer_norm(xg, &rg, gg, bg, 1e-5, yg);
      agree(yc, yg, 2e-5);
    }
  }
  SECTION("softmax_rows in place, rows of 400 and of 5, large logits") {
    for (int cols : {400, 5}) {
      auto [xc, xg] = both(Shape{123, cols, 1, 1},
                           random_values(123 * static_cast<std::size_t>(cols), 10, 30.0));
      cpu.ops->softmax_rows(xc, xc);
      gpu.ops->softmax_rows(xg, xg);
      agree(xc, xg, 5e-6);  // probabilities <= 1; the GPU sums a row in fp32
    }
  }
  SECTION("split_heads / merge_heads") {
    auto [xc, xg] = both(Shape{2 * 7, 8 * 4, 1, 1}, random_values(2 * 7 * 32, 11));
    Tensor pc = cpu.be->empty(Shape{2 * 8 * 7, 4, 1, 1}, Layout::nchw);
    Tensor pg = gpu.be->empty(Shape{2 * 8 * 7, 4, 1, 1}, Layout::nchw);
    cpu.ops->split_heads(xc, 2, 8, pc);
    gpu.ops->split_heads(xg, 2, 8, pg);
    agree(pc, pg, 0.0);
    Tensor bg = gpu.be->empty(xg.shape(), Layout::nchw);
    gpu.ops->merge_heads(pg, 2, 8, bg);
    agree(xc, bg, 0.0);
  }
  SECTION("batched_gemm, every transpose combination, alpha and beta") {
    int const batch = 6, m = 33, n = 17, k = 40;
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        auto [ac, ag] =
            both(Shape{batch * (ta ? k : m), ta ? m : k, 1, 1}, random_values(batch * m * k, 12));
        auto [bc, bg] =
            both(Shape{batch * (tb ? n : k), tb ? k : n, 1, 1}, random_values(batch * k * n, 13));
        auto [cc, cg] = both(Shape{batch * m, n, 1, 1}, random_values(batch * m * n, 14));
        cpu.ops->batched_gemm(ta, tb, batch, m, n, k, 0.7, ac, bc, 0.3, cc);
        gpu.ops->batched_gemm(ta, tb, batch, m, n, k, 0.7, ag, bg, 0.3, cg);
        INFO("ta=" << ta << " tb=" << tb);
        agree(cc, cg, 2e-5);  // sums of 40 products of magnitude <= 1, fp32 in any order
      }
    }
  }
  SECTION("max_pool2d, NHWC and NCHW") {
    for (Layout l : {Layout::nhwc, Layout::nchw}) {
      auto [xc, xg] = both(Shape{2, 16, 17, 20}, random_values(2 * 16 * 17 * 20, 15), l);
      Shape const ys = nn::pool_output_shape(xc.shape(), nn::PoolGeometry{});
      Tensor yc = cpu.be->empty(ys, l), yg = gpu.be->empty(ys, l);
      cpu.ops->max_pool2d(xc, nn::PoolGeometry{}, yc);
      gpu.ops->max_pool2d(xg, nn::PoolGeometry{}, yg);
      agree(yc, yg, 0.0);
    }
  }
}

TEST_CASE("model: CUDA (fp32) and CPU give the same logits and boxes") {
  detr::ModelConfig const c = small_config();
  int const batch = 2, size = 64;
  auto const pixels = random_values(static_cast<std::size_t>(batch * 3 * size * size), 77);

  // The scale of fp32 rounding for this model: CPU fp32 against CPU fp64.
  Side cpu64 = cpu_side(nn::DType::f64);
  Side cpu = cpu_side();
  Outputs const ref = run_model(cpu64, c, pixels, batch, size);
  Outputs const want = run_model(cpu, c, pixels, batch, size);
  double const fp32_logits = max_abs_diff(want.logits, ref.logits);
  double const fp32_boxes = max_abs_diff(want.boxes, ref.boxes);

  Side gpu = gpu_side();
  Outputs const got = run_model(gpu, c, pixels, batch, size);
  double const d_logits = max_abs_diff(got.logits, want.logits);
  double const d_boxes = max_abs_diff(got.boxes, want.boxes);
  std::printf(
      "max |difference|: logits GPU-CPU %.3g (CPU fp32-fp64 %.3g), boxes GPU-CPU %.3g "
      "(CPU fp32-fp64 %.3g)\n",
      d_logits, fp32_logits, d_boxes, fp32_boxes);
  CHECK(d_logits <= 1e-3);
  CHECK(d_boxes <= 5e-4);
  // The outputs are not degenerate (a constant model would agree trivially).
  CHECK(*std::max_element(want.logits.begin(), want.logits.end()) -
            *std::min_element(want.logits.begin(), want.logits.end()) >
        0.5);
}

TEST_CASE("model: CUDA with TF32 tensor-core math stays close to the CPU") {
  detr::ModelConfig const c = small_config();
  int const batch = 2, size = 64;
  auto const pixels = random_values(static_cast<std::size_t>(batch * 3 * size * size), 78);
  Side cpu = cpu_side();
  Side gpu = gpu_side(true);
  Outputs const want = run_model(cpu, c, pixels, batch, size);
  Outputs const got = run_model(gpu, c, pixels, batch, size);
  double const d_logits = max_abs_diff(got.logits, want.logits);
  double const d_boxes = max_abs_diff(got.boxes, want.boxes);
  std::printf("TF32: max |difference| logits %.3g, boxes %.3g\n", d_logits, d_boxes);
  // TF32 keeps 10 mantissa bits (~5e-4 relative per product); through the whole model that is
  // of order 1e-2 on logits of order 1. An indexing bug gives differences of order 1.
  CHECK(d_logits <= 0.1);
  CHECK(d_boxes <= 0.05);
}
