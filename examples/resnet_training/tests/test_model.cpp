// resnet_training on the CPU: the module ranges every layer emits (through the NVTX Recorder),
// layout equivalence, the loader, and the command line.
#include "tiny.hpp"

#include "common/cpu_backend.hpp"
#include "common/report_files.hpp"
#include "config.hpp"
#include "data.hpp"
#include "report_view.hpp"
#include "runtime.hpp"
#include "support.hpp"
#include "train.hpp"

#include <nsightkit/range.hpp>
#include <nsightkit/testing.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

using nsightkit::testing::Recorder;
using resnet_test::small_spec;
using resnet_test::Tiny;

namespace {

/// push/pop lines of a module with children.
void module(std::vector<std::string>& out, char const* name, std::vector<std::string> children) {
  out.push_back(std::string{"push nsightkit "} + name);
  out.insert(out.end(), children.begin(), children.end());
  out.emplace_back("pop nsightkit");
}
std::vector<std::string> leaf(char const* name) {
  return {std::string{"push nsightkit "} + name, "pop nsightkit"};
}
std::vector<std::string> seq(std::initializer_list<std::vector<std::string>> parts) {
  std::vector<std::string> out;
  for (auto const& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}
std::vector<std::string> node(char const* name, std::vector<std::string> children) {
  std::vector<std::string> out;
  module(out, name, std::move(children));
  return out;
}

bool fake_cuda(std::string* why) {
  if (why != nullptr) *why = "test: no device";
  return false;
}
bool fake_cuda_present(std::string*) { return true; }

resnet::ParseResult parse(std::vector<char const*> args, bool (*probe)(std::string*) = fake_cuda) {
  args.insert(args.begin(), "resnet_training");
  return resnet::parse_config(static_cast<int>(args.size()), args.data(), probe);
}

}  // namespace

TEST_CASE("every layer's forward and backward is a module range, nested by the model's structure") {
  auto be = nn::make_cpu_backend(nn::DType::f32);
  Tiny t{*be, small_spec(nn::Layout::nchw), 4, 8, 3};
  Recorder rec;
  {
    nsightkit::ScopedRange const f{"forward"};
    t.model->forward(t.images, t.labels, t.metrics);
  }
  {
    nsightkit::ScopedRange const b{"backward"};
    t.model->backward();
  }
  auto const block1 = seq({leaf("conv1"), leaf("bn1"), leaf("relu1"), leaf("conv2"), leaf("bn2"),
                           leaf("add"), leaf("relu2")});
  auto const block2 =
      seq({leaf("conv1"), leaf("bn1"), leaf("relu1"), leaf("conv2"), leaf("bn2"),
           node("downsample", seq({leaf("conv"), leaf("bn")})), leaf("add"), leaf("relu2")});
  auto const forward =
      node("forward",
           seq({node("stem", seq({leaf("conv"), leaf("bn"), leaf("relu")})),
                node("stage1", node("block0", block1)), node("stage2", node("block0", block2)),
                leaf("pool"), leaf("fc"), leaf("loss")}));
  // Backward runs the same modules in reverse; the gradient sum of a block's input is the
  // block's own work (no module), and the stem's conv computes no image gradient.
  auto const back1 =
      seq({leaf("relu2"), leaf("bn2"), leaf("conv2"), leaf("relu1"), leaf("bn1"), leaf("conv1")});
  auto const back2 = seq({leaf("relu2"), leaf("bn2"), leaf("conv2"), leaf("relu1"), leaf("bn1"),
                          leaf("conv1"), node("downsample", seq({leaf("bn"), leaf("conv")}))});
  auto const backward =
      node("backward", seq({leaf("fc"), leaf("pool"), node("stage2", node("block0", back2)),
                            node("stage1", node("block0", back1)),
                            node("stem", seq({leaf("relu"), leaf("bn"), leaf("conv")}))}));
  REQUIRE(rec.lines() == nsk_test::expect(seq({forward, backward})));
}

TEST_CASE("NCHW and NHWC compute the same network") {
  auto be = nn::make_cpu_backend(nn::DType::f32);
  Tiny a{*be, small_spec(nn::Layout::nchw), 4, 8, 11};
  Tiny b{*be, small_spec(nn::Layout::nhwc), 4, 8, 11};
  double const la = a.loss_and_gradients();
  double const lb = b.loss_and_gradients();
  REQUIRE(la == Approx(lb).epsilon(1e-5));
  auto& pa = a.params.params();
  auto& pb = b.params.params();
  REQUIRE(pa.size() == pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    INFO(pa[i].name);
    auto const ga = resnet_test::logical(*be, pa[i].grad);
    auto const gb = resnet_test::logical(*be, pb[i].grad);
    double scale = 1e-6, diff = 0;
    for (std::size_t k = 0; k < ga.size(); ++k) {
      scale = std::max(scale, std::abs(ga[k]));
      diff = std::max(diff, std::abs(ga[k] - gb[k]));
    }
    CHECK(diff <= 1e-4 * scale);
  }
}

TEST_CASE("the loader makes the same batches whatever the worker count, in order") {
  resnet::DataSpec data;
  data.image_size = 8;
  data.classes = 6;
  auto alloc = resnet::make_pageable_allocator();
  resnet::LoaderOptions serial;
  serial.batch = 5;
  resnet::LoaderOptions parallel = serial;
  parallel.workers = 3;
  resnet::Loader a{data, serial, *alloc};
  resnet::Loader b{data, parallel, *alloc};
  for (int i = 0; i < 7; ++i) {
    resnet::HostBatch x = a.next();
    resnet::HostBatch y = b.next();
    REQUIRE(x.index == i);
    REQUIRE(y.index == i);
    REQUIRE(x.image_bytes == 5u * 3u * 8u * 8u * sizeof(float));
    REQUIRE(std::memcmp(x.images, y.images, x.image_bytes) == 0);
    REQUIRE(std::memcmp(x.labels, y.labels, x.label_bytes) == 0);
    for (int j = 0; j < 5; ++j) {
      REQUIRE(x.labels[j] >= 0);
      REQUIRE(x.labels[j] < 6);
    }
  }
}

TEST_CASE("a batch in NHWC is the NCHW batch transposed") {
  resnet::DataSpec nchw;
  nchw.image_size = 6;
  resnet::DataSpec nhwc = nchw;
  nhwc.layout = nn::Layout::nhwc;
  std::vector<float> a(3 * 36), b(3 * 36);
  REQUIRE(resnet::synthesize(nchw, 42, a.data()) == resnet::synthesize(nhwc, 42, b.data()));
  for (int c = 0; c < 3; ++c)
    for (int p = 0; p < 36; ++p)
      REQUIRE(a[static_cast<std::size_t>(c * 36 + p)] == b[static_cast<std::size_t>(p * 3 + c)]);
}

TEST_CASE("a worker's failure reaches the training thread as an exception") {
  struct Failing : resnet::HostAllocator {
    std::unique_ptr<resnet::HostBuffer> allocate(std::size_t) override {
      throw std::runtime_error("out of page-locked memory (test)");
    }
    char const* name() const noexcept override { return "failing"; }
  } failing;
  resnet::DataSpec data;
  data.image_size = 4;
  resnet::LoaderOptions o;
  o.batch = 2;
  o.workers = GENERATE(0, 2);
  resnet::Loader loader{data, o, failing};
  REQUIRE_THROWS_WITH(loader.next(), "out of page-locked memory (test)");
}

TEST_CASE("command line: defaults follow the device") {
  auto cpu = parse({});
  REQUIRE(cpu.run);
  REQUIRE(cpu.config.device == nn::Device::cpu);
  REQUIRE(cpu.config.device_note.find("test: no device") != std::string::npos);
  REQUIRE(cpu.config.steps == 30);
  REQUIRE(cpu.config.batch == 16);
  REQUIRE(!cpu.config.pinned);
  REQUIRE(!cpu.config.prefetch);

  auto gpu = parse({}, fake_cuda_present);
  REQUIRE(gpu.run);
  REQUIRE(gpu.config.device == nn::Device::cuda);
  REQUIRE(gpu.config.pinned);
  REQUIRE(gpu.config.prefetch);
  REQUIRE(gpu.config.image_size == 64);

  auto baseline =
      parse({"--workers", "0", "--pageable", "--no-prefetch", "--layout=nhwc"}, fake_cuda_present);
  REQUIRE(baseline.run);
  REQUIRE(baseline.config.workers == 0);
  REQUIRE(!baseline.config.pinned);
  REQUIRE(!baseline.config.prefetch);
  REQUIRE(baseline.config.layout == nn::Layout::nhwc);

  // --device auto on a machine without a GPU: GPU-only switches are noted and ignored.
  auto fallback = parse({"--pinned", "--prefetch"});
  REQUIRE(fallback.run);
  REQUIRE(!fallback.config.pinned);
  REQUIRE(fallback.config.notes.size() == 2);
}

TEST_CASE("command line: bad values are errors that name the flag") {
  struct Case {
    std::vector<char const*> args;
    char const* message;
  };
  std::vector<Case> const cases = {
      {{"--batch", "abc"}, "--batch: 'abc' is not an integer"},
      {{"--batch", "1"}, "--batch: 1 is outside [2, 65536]"},
      {{"--steps"}, "--steps needs a value"},
      {{"--lr", "-1"}, "--lr: -1 is outside"},
      {{"--lr", "nan"}, "--lr: 'nan' is not a finite number"},
      {{"--layout", "nhcw"}, "--layout: 'nhcw' is not one of nchw|nhwc"},
      {{"--device", "tpu"}, "--device: 'tpu' is not one of auto|cpu|cuda"},
      {{"--frobnicate"}, "unknown option --frobnicate"},
      {{"--workers", "2", "--workers", "3"}, "--workers given twice"},
      {{"--pinned=yes"}, "--pinned takes no value"},
      {{"--device", "cpu", "--pinned"}, "--pinned needs the CUDA backend"},
      {{"--device", "cpu", "--prefetch"}, "--prefetch needs the CUDA backend"},
      {{"--device", "cuda"}, "--device cuda: test: no device"},
      {{"--steps", "5", "--warmup", "5"}, "--warmup: 5 warm-up steps leave no measured step"},
      {{"--image-size", "10"},
       "--image-size: model: image size 10 must be at least 2 and divisible by 4"},
      {{"--report", "tabel"}, "--report: unknown item 'tabel'"},
      {{"--metrics="}, "--metrics: empty path"},
      {{"positional"}, "unexpected argument 'positional'"},
      {{"--device", "cpu", "--cuda-graph"},
       "--cuda-graph needs the CUDA backend (--device cuda): CUDA graphs replay GPU work, the "
       "CPU backend runs every step eagerly"},
      // --device auto without a device: an error too (a graph run cannot fall back to eager).
      {{"--cuda-graph"},
       "--cuda-graph needs the CUDA backend (--device cuda): CUDA graphs "
       "replay GPU work, the CPU backend runs every step eagerly (no CUDA "
       "device: test: no device)"},
  };
  for (auto const& c : cases) {
    auto r = parse(c.args);
    INFO(r.error);
    CHECK(!r.run);
    CHECK(r.exit_code == 2);
    CHECK(r.error.rfind("resnet_training: error: ", 0) == 0);
    CHECK(r.error.find(c.message) != std::string::npos);
  }
}

TEST_CASE("command line: --help lists every optimisation switch and exits 0") {
  auto r = parse({"--help"});
  REQUIRE(!r.run);
  REQUIRE(r.exit_code == 0);
  std::string const help = resnet::help_text();
  for (char const* flag : {"--steps", "--batch", "--image-size", "--workers", "--decode-us",
                           "--pinned", "--pageable", "--prefetch", "--no-prefetch", "--layout",
                           "--device", "--lr", "--rng-start", "--report", "--cuda-graph"}) {
    INFO(flag);
    CHECK(help.find(flag) != std::string::npos);
  }
}

TEST_CASE("command line: --cuda-graph on CUDA needs two warm-up steps") {
  auto const on = parse({"--cuda-graph"}, fake_cuda_present);
  REQUIRE(on.run);
  CHECK(on.config.cuda_graph);
  CHECK(on.config.warmup == 10);  // the CUDA default
  CHECK(!parse({}, fake_cuda_present).config.cuda_graph);
  CHECK(parse({"--cuda-graph", "--steps", "4", "--warmup", "2"}, fake_cuda_present).run);
  for (char const* warmup : {"0", "1"}) {
    auto const r = parse({"--cuda-graph", "--warmup", warmup}, fake_cuda_present);
    INFO(r.error);
    CHECK(!r.run);
    CHECK(r.exit_code == 2);
    CHECK(r.error.find(std::string{"--cuda-graph: --warmup "} + warmup +
                       " is too few: the CUDA graph run's first step runs eagerly") !=
          std::string::npos);
  }
}

TEST_CASE("cuda graph run: the CPU runtime makes no step graph") {
  resnet::RuntimeOptions o;
  o.batch = 2;
  o.image_size = 4;
  auto rt = resnet::make_cpu_runtime(o);
  resnet::StepBody const body = [](nn::Tensor const&, nn::Tensor const&, nn::Tensor&) {};
  CHECK_THROWS_WITH(rt->make_step_graph(body, "training step"),
                    "CUDA graph 'training step': CUDA graphs need the CUDA runtime");
}

TEST_CASE("cuda graph run: report files of each run are named with the run") {
  // nn::tagged_path (examples/common/report_files.hpp), which detr_inference uses too.
  using nn::tagged_path;
  CHECK(tagged_path("r.json", "eager") == "r.eager.json");
  CHECK(tagged_path("out/r.json", "graph") == "out/r.graph.json");
  CHECK(tagged_path("out.d/report", "graph") == "out.d/report.graph");
  CHECK(tagged_path("report", "eager") == "report.eager");
  CHECK(tagged_path(".hidden", "eager") == ".hidden.eager");
  CHECK(tagged_path("t.json.gz", "graph") == "t.graph.json.gz");
  CHECK(tagged_path("dir/t.gz", "graph") == "dir/t.graph.gz");
  CHECK(tagged_path("resnet_training_report.html", "eager") == "resnet_training_report.eager.html");
}

TEST_CASE("cuda graph run: the losses of two runs are compared bit for bit") {
  using resnet::first_difference;
  using resnet::StepRecord;
  std::vector<StepRecord> const eager = {{2.302585, 0.125, "wait"}, {2.25, 0.25, "active"}};
  auto graph = eager;
  graph[0].phase = "warmup";  // phases are not results
  CHECK(first_difference(eager, graph).empty());
  // One unit in the last place of the second step's loss.
  graph[1].loss = std::nextafter(eager[1].loss, 3.0);
  CHECK(first_difference(eager, graph).rfind("step 1: loss eager 2.25, graph 2.25", 0) == 0);
  graph = eager;
  graph[0].accuracy = 0.1875;
  CHECK(first_difference(eager, graph) == "step 0: accuracy eager 0.125, graph 0.1875");
  // Equal as numbers, not as bits: a difference.
  auto zero = eager;
  zero[0].loss = 0.0;
  auto minus_zero = zero;
  minus_zero[0].loss = -0.0;
  CHECK(!first_difference(zero, minus_zero).empty());
  graph = eager;
  graph.pop_back();
  CHECK(first_difference(eager, graph) == "2 eager steps, 1 in the graph run");
}

TEST_CASE("cuda graph run: eager and replayed rows side by side, per measured step") {
  nsightkit::ReportSnapshot eager, graph;
  auto row = [](char const* path, std::size_t depth, std::uint64_t calls, std::int64_t cpu_ns,
                std::uint64_t kernels, std::int64_t busy_ns) {
    nsightkit::PathStats r;
    r.path = path;
    r.depth = depth;
    r.cpu.count = calls;
    r.cpu.total_ns = cpu_ns;
    r.work.kernels = kernels;
    r.work.busy_ns = busy_ns;
    return r;
  };
  eager.gpu.source = graph.gpu.source = "cupti";
  eager.paths = {row("forward", 0, 4, 8'000'000, 40, 6'000'000),
                 row("forward/stem", 1, 4, 2'000'000, 12, 1'000'000),
                 row("forward/stem/conv", 2, 4, 1'000'000, 4, 500'000)};
  graph.paths = {row("graph inputs", 0, 4, 400'000, 0, 80'000),
                 row("forward", 0, 0, 0, 40, 5'000'000), row("forward/stem", 1, 0, 0, 12, 800'000)};
  nsightkit::NamedStats replay;
  replay.name = "graph training step (replay)";
  replay.time.count = 4;
  replay.time.total_ns = 200'000;
  graph.start_end.push_back(replay);
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  resnet::print_graph_comparison(f, eager, graph, 4);
  std::rewind(f);
  std::string text;
  for (int c = std::fgetc(f); c != EOF; c = std::fgetc(f)) text += static_cast<char>(c);
  std::fclose(f);
  INFO(text);
  // Per step: CPU 2 ms eager, none replayed; 10 kernels both; busy 1.5 vs 1.25 ms.
  CHECK(text.find("  forward                          2.000         -      10.0      10.0"
                  "       1.500       1.250\n") != std::string::npos);
  CHECK(text.find("  forward/stem                     0.500         -       3.0       3.0") !=
        std::string::npos);
  CHECK(text.find("forward/stem/conv") == std::string::npos);  // modules below the top level
  CHECK(text.find("  graph inputs                         -     0.100       0.0       0.0") !=
        std::string::npos);
  CHECK(text.find("graph training step (replay)") != std::string::npos);
  CHECK(text.find("0.050   (the host's time in cudaGraphLaunch)") != std::string::npos);
  CHECK(text.find("GPU source") == std::string::npos);  // CUPTI: no note
  graph.gpu.source = "events";
  std::FILE* g = std::tmpfile();
  REQUIRE(g != nullptr);
  resnet::print_graph_comparison(g, eager, graph, 4);
  std::rewind(g);
  text.clear();
  for (int c = std::fgetc(g); c != EOF; c = std::fgetc(g)) text += static_cast<char>(c);
  std::fclose(g);
  CHECK(text.find("(GPU source 'events': kernels are attributed to modules only with the CUPTI "
                  "source") != std::string::npos);
}
