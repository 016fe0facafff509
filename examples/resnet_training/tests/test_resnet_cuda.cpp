// resnet_training on a GPU (skipped, exit 77, without one):
// 1. the CUDA backend (cuDNN, cuBLAS, own kernels; FP32 FMA math, deterministic algorithms)
//    computes the same forward logits, gradients and SGD step as the CPU backend, both layouts;
// 2. every input pipeline (pageable/pinned x copy on the compute stream/prefetcher)
//    trains bit-for-bit the same run — no batch is lost, reordered or read while being copied;
// 3. --cuda-graph: the graph run trains bit-for-bit the eager run (every pipeline), replaying one
//    recorded step; a step that allocates during recording fails with a message naming the call.
#include "tiny.hpp"

#include "common/cpu_backend.hpp"
#include "common/cuda_backend.hpp"
#include "config.hpp"
#include "runtime.hpp"
#include "train.hpp"

#include <nsightkit/cuda_check.hpp>
#include <nsightkit/module.hpp>

#include <cuda_runtime_api.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

using resnet_test::Tiny;

namespace {

/// max |a - b| / max(max |a|, floor): the error relative to the tensor's scale.
double scaled_error(std::vector<double> const& a, std::vector<double> const& b, double floor) {
  REQUIRE(a.size() == b.size());
  double scale = floor, diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, std::abs(a[i]));
    diff = std::max(diff, std::abs(a[i] - b[i]));
  }
  return diff / scale;
}

struct Shape {
  int width, stages, blocks, image;
};

resnet::ModelSpec spec_for(nn::Layout layout, Shape const& s) {
  resnet::ModelSpec spec;
  spec.classes = 10;
  spec.width = s.width;
  spec.stages = s.stages;
  spec.blocks = s.blocks;
  spec.layout = layout;
  spec.zero_init_residual = false;  // every branch contributes to the outputs compared
  return spec;
}

}  // namespace

TEST_CASE("the CUDA backend matches the CPU backend: logits, gradients, one SGD step") {
  auto const layout = GENERATE(nn::Layout::nchw, nn::Layout::nhwc);
  // Channel counts that are multiples of 4 and even planes take the kernels' float4 paths;
  // width 6 with 10x10 and 5x5 planes takes the scalar ones.
  auto const shape = GENERATE(Shape{8, 3, 2, 16}, Shape{6, 2, 1, 10});
  CAPTURE(nn::to_string(layout), shape.width, shape.image);
  auto cpu = nn::make_cpu_backend(nn::DType::f32);
  nn::CudaBackendOptions o;
  o.tf32 = false;  // FP32 FMA math and deterministic algorithms: comparable with the CPU
  auto gpu = nn::make_cuda_backend(o);
  std::printf("%s\n%s, width %d, %dx%d images:\n", gpu->describe().c_str(), nn::to_string(layout),
              shape.width, shape.image, shape.image);
  Tiny c{*cpu, spec_for(layout, shape), 8, shape.image, 5};
  Tiny g{*gpu, spec_for(layout, shape), 8, shape.image, 5};

  // Forward: logits (one kernel path per layer; the loss and its correct-count).
  nn::Tensor const& lc = c.model->forward(c.images, c.labels, c.metrics);
  nn::Tensor const& lg = g.model->forward(g.images, g.labels, g.metrics);
  double const logit_err = scaled_error(cpu->read(lc), gpu->read(lg), 1e-3);
  auto const mc = cpu->read(c.metrics), mg = gpu->read(g.metrics);
  std::printf(
      "%s: logits: max error %.2e of their scale; loss cpu %.7f gpu %.7f; correct %g / %g\n",
      nn::to_string(layout), logit_err, mc[0], mg[0], mc[1], mg[1]);
  CHECK(logit_err < 1e-4);
  CHECK(mg[0] == Approx(mc[0]).epsilon(1e-5));

  // Backward: every gradient.
  c.model->backward();
  g.model->backward();
  auto& pc = c.params.params();
  auto& pg = g.params.params();
  REQUIRE(pc.size() == pg.size());
  double worst = 0;
  std::string worst_name;
  for (std::size_t i = 0; i < pc.size(); ++i) {
    double const e = scaled_error(cpu->read(pc[i].grad), gpu->read(pg[i].grad), 1e-6);
    if (e > worst) {
      worst = e;
      worst_name = pc[i].name;
    }
  }
  std::printf("%s: gradients: worst error %.2e of the tensor's scale (%s)\n", nn::to_string(layout),
              worst, worst_name.c_str());
  INFO("worst gradient: " << worst_name);
  CHECK(worst < 1e-3);

  // One SGD step (momentum, weight decay), then the next forward.
  nn::Sgd::Options const so{0.1, 0.9, 5e-4};
  nn::Sgd{*cpu, c.params, so}.step();
  nn::Sgd{*gpu, g.params, so}.step();
  double worst_w = 0;
  for (std::size_t i = 0; i < pc.size(); ++i) {
    worst_w = std::max(worst_w, scaled_error(cpu->read(pc[i].value), gpu->read(pg[i].value), 1e-6));
  }
  double const l2c = c.loss(), l2g = g.loss();
  std::printf("%s: after one SGD step: weights worst error %.2e; loss cpu %.7f gpu %.7f\n",
              nn::to_string(layout), worst_w, l2c, l2g);
  CHECK(worst_w < 1e-5);
  CHECK(l2g == Approx(l2c).epsilon(1e-4));
  CHECK(l2c != Approx(mc[0]).epsilon(1e-6));  // the step changed the model
}

TEST_CASE("every input pipeline trains exactly the same run") {
  auto run = [](bool pinned, bool prefetch, int workers, nn::Layout layout) {
    resnet::Config cfg;
    cfg.device = nn::Device::cuda;
    cfg.steps = 12;
    cfg.warmup = 2;
    cfg.batch = 64;  // 3 MiB batches, as a real loader would move
    cfg.image_size = 64;
    cfg.width = 8;
    cfg.blocks = 1;
    cfg.workers = workers;
    cfg.decode_us = 0;
    cfg.pinned = pinned;
    cfg.prefetch = prefetch;
    cfg.layout = layout;
    cfg.tf32 = false;
    cfg.cudnn_benchmark = false;  // heuristics: the same algorithms in every run (timing could
                                  // rank two deterministic algorithms differently run to run)
    cfg.report = "off";
    cfg.report_given = true;
    cfg.log_every = 100;
    std::FILE* sink = std::tmpfile();
    REQUIRE(sink != nullptr);
    resnet::RunResult r = resnet::train(cfg, sink);
    std::fclose(sink);
    std::vector<double> losses;
    for (auto const& s : r.steps) losses.push_back(s.loss);
    std::printf("pinned=%d prefetch=%d workers=%d %s: loss %.6f -> %.6f, %.0f images/s\n", pinned,
                prefetch, workers, nn::to_string(layout), losses.front(), losses.back(),
                r.images_per_second);
    return losses;
  };
  auto const base = run(false, false, 0, nn::Layout::nchw);
  REQUIRE(base.back() < base.front());
  // Same data, same deterministic kernels: only the way batches reach the GPU differs.
  CHECK(run(false, false, 3, nn::Layout::nchw) == base);
  CHECK(run(true, false, 2, nn::Layout::nchw) == base);
  CHECK(run(false, true, 2, nn::Layout::nchw) == base);
  CHECK(run(true, true, 3, nn::Layout::nchw) == base);
  // Channels-last sums in another order: close, not identical.
  auto const nhwc = run(true, true, 2, nn::Layout::nhwc);
  for (std::size_t i = 0; i < 3; ++i) CHECK(nhwc[i] == Approx(base[i]).epsilon(1e-3));
}

namespace {

resnet::Config small_cuda_run(bool pinned, bool prefetch, int workers) {
  resnet::Config cfg;
  cfg.device = nn::Device::cuda;
  cfg.steps = 10;
  cfg.warmup = 2;
  cfg.batch = 32;
  cfg.image_size = 32;
  cfg.width = 8;
  cfg.blocks = 1;
  cfg.workers = workers;
  cfg.decode_us = 0;
  cfg.pinned = pinned;
  cfg.prefetch = prefetch;
  cfg.layout = nn::Layout::nchw;
  cfg.tf32 = false;  // FP32 FMA math and deterministic cuDNN algorithms
  cfg.report = "off";
  cfg.report_given = true;
  cfg.log_every = 100;
  return cfg;
}

std::vector<double> losses_of(std::vector<resnet::StepRecord> const& steps) {
  std::vector<double> out;
  for (auto const& s : steps) out.push_back(s.loss);
  return out;
}

}  // namespace

TEST_CASE(
    "cuda graph run: the replayed run trains exactly the eager run, on every input pipeline") {
  struct Pipeline {
    bool pinned, prefetch;
    int workers;
  };
  for (Pipeline const p : {Pipeline{false, false, 0}, Pipeline{true, false, 2},
                           Pipeline{false, true, 2}, Pipeline{true, true, 3}}) {
    resnet::Config cfg = small_cuda_run(p.pinned, p.prefetch, p.workers);
    cfg.cuda_graph = true;
    std::FILE* sink = std::tmpfile();
    REQUIRE(sink != nullptr);
    resnet::RunResult const r = resnet::train(cfg, sink);
    std::fclose(sink);
    std::printf(
        "pinned=%d prefetch=%d workers=%d: loss %.6f -> %.6f; %s; step %.3f ms eager, "
        "%.3f ms graph\n",
        p.pinned, p.prefetch, p.workers, r.steps.front().loss, r.steps.back().loss, r.graph.c_str(),
        r.eager_step_ms, r.step_ms);
    CAPTURE(p.pinned, p.prefetch, p.workers);
    CHECK(r.cuda_graph);
    CHECK(r.losses_identical);
    CHECK(resnet::first_difference(r.eager_steps, r.steps).empty());
    CHECK(losses_of(r.steps) == losses_of(r.eager_steps));
    CHECK(r.steps.back().loss < r.steps.front().loss);
    // Step 0 eager, step 1 recorded and launched, then one launch per step.
    CHECK(r.graph.find("9 replays, instantiated 1x, updated in place 0x") != std::string::npos);
  }
  // A plain run (no --cuda-graph, a backend of its own) trains the same: the eager half of a
  // --cuda-graph run is an ordinary run. cuDNN's heuristics choose the same algorithms for both
  // backends (timing them could rank two algorithms differently).
  resnet::Config plain = small_cuda_run(true, true, 2);
  plain.cudnn_benchmark = false;
  resnet::Config graph = plain;
  graph.cuda_graph = true;
  std::FILE* sink = std::tmpfile();
  REQUIRE(sink != nullptr);
  auto const a = resnet::train(plain, sink);
  auto const b = resnet::train(graph, sink);
  std::fclose(sink);
  CHECK(losses_of(b.steps) == losses_of(a.steps));
}

TEST_CASE("cuda graph run with TF32 and channels-last: close to the eager run") {
  resnet::Config cfg = small_cuda_run(true, true, 2);
  cfg.cuda_graph = true;
  cfg.tf32 = true;
  cfg.layout = nn::Layout::nhwc;
  std::FILE* sink = std::tmpfile();
  REQUIRE(sink != nullptr);
  resnet::RunResult const r = resnet::train(cfg, sink);
  std::fclose(sink);
  std::printf("TF32, channels-last: %s; largest relative loss difference %.3g\n",
              r.losses_identical ? "identical" : "not identical", r.loss_max_relative_difference);
  REQUIRE(r.eager_steps.size() == r.steps.size());
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(r.steps[i].loss == Approx(r.eager_steps[i].loss).epsilon(1e-3));
  }
}

TEST_CASE("cuda graph run: a step that allocates during recording fails naming cudaMalloc") {
  resnet::RuntimeOptions o;
  o.batch = 4;
  o.image_size = 8;
  auto rt = resnet::make_cuda_runtime(o);
  void* kept = nullptr;
  resnet::StepBody const body = [&](nn::Tensor const&, nn::Tensor const&, nn::Tensor&) {
    nsightkit::ModuleScope const scope{"layer2"};
    void* p = nullptr;
    NSIGHTKIT_CUDA_CHECK(cudaMalloc(&p, 256));  // eagerly fine; refused while recording
    if (kept != nullptr) NSIGHTKIT_CUDA_CHECK(cudaFree(kept));
    kept = p;
  };
  auto graph = rt->make_step_graph(body, "allocating step");
  resnet::DeviceBatch batch;
  batch.images = rt->backend().empty(nn::Shape{4, 3, 8, 8}, nn::Layout::nchw);
  batch.labels = rt->backend().empty(nn::Shape{4, 1, 1, 1}, nn::Layout::nchw, nn::DType::i32);
  (void)graph->run(batch);  // eager
  try {
    (void)graph->run(batch);  // recorded
    FAIL("the recording of a step calling cudaMalloc succeeded");
  } catch (std::runtime_error const& e) {
    std::string const what = e.what();
    std::printf("recording failure:\n%s\n", what.c_str());
    CHECK(what.find("recording of graph 'allocating step' failed") != std::string::npos);
    CHECK(what.find("cudaMalloc") != std::string::npos);
  }
  CHECK(graph->replays() == 0);
  // The stream left CUDA's capture mode: ordinary work still runs.
  rt->finish();
  if (kept != nullptr) NSIGHTKIT_CUDA_CHECK(cudaFree(kept));
  // A batch of another shape is refused with the two shapes named.
  resnet::DeviceBatch small;
  small.images = rt->backend().empty(nn::Shape{2, 3, 8, 8}, nn::Layout::nchw);
  small.labels = batch.labels;
  CHECK_THROWS_WITH(graph->run(small),
                    Catch::Contains("the batch's images") && Catch::Contains("do not match"));
}
