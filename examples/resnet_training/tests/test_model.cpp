// resnet_training on the CPU: the module ranges every layer emits (through the NVTX Recorder),
// layout equivalence, the loader, and the command line.
#include "tiny.hpp"

#include "common/cpu_backend.hpp"
#include "config.hpp"
#include "data.hpp"
#include "support.hpp"

#include <nsightkit/range.hpp>
#include <nsightkit/testing.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
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

TEST_CASE("command line: --help lists every switch of seed 001 and exits 0") {
  auto r = parse({"--help"});
  REQUIRE(!r.run);
  REQUIRE(r.exit_code == 0);
  std::string const help = resnet::help_text();
  for (char const* flag :
       {"--steps", "--batch", "--image-size", "--workers", "--decode-us", "--pinned", "--pageable",
        "--prefetch", "--no-prefetch", "--layout", "--device", "--lr", "--seed", "--report"}) {
    INFO(flag);
    CHECK(help.find(flag) != std::string::npos);
  }
}
