// CUDA-graph recording and replay on a device, with the CUPTI component: an unsafe call inside a
// module is named with its module; an unjoined fork is named; check mode lists every unsafe call
// without throwing; a replay's kernels count, per module, exactly as the eager run's and take
// about the same busy time; a graph is updated in place when its topology is unchanged.
#include "gpu/gpu_support.cuh"

#include <nsightkit/cuda_check.hpp>
#include <nsightkit/cupti.hpp>
#include <nsightkit/graph.hpp>
#include <nsightkit/module.hpp>
#include <nsightkit/report.hpp>

#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <string>

using nsightkit::GraphRecorder;
using nsightkit::ModuleScope;
using nsightkit::Report;
using nsightkit::ScopedRange;
using nsightkit::StreamView;

namespace {
using nsk_gpu_test::spin;
using nsk_gpu_test::Stream;

constexpr long long us = 1000;

/// A small model: three layers of spin kernels of known lengths, in module scopes.
void forward(cudaStream_t s, bool bad_malloc = false) {
  ModuleScope model{"model"};
  {
    ModuleScope l1{"layer1"};
    spin<<<1, 1, 0, s>>>(40 * us);
    spin<<<1, 1, 0, s>>>(30 * us);
  }
  {
    ModuleScope l2{"layer2"};
    if (bad_malloc) {
      void* p = nullptr;
      (void)cudaMalloc(&p, 1024);  // unsafe while recording
    }
    spin<<<1, 1, 0, s>>>(60 * us);
  }
  {
    ModuleScope head{"head"};
    spin<<<1, 1, 0, s>>>(25 * us);
  }
}

nsightkit::ReportOptions cupti_options() {
  nsightkit::ReportOptions o;
  o.table.clear();
  o.at_exit = false;
  o.gpu_source = nsightkit::GpuSourceKind::cupti;
  return o;
}
}  // namespace

TEST_CASE("cudaMalloc inside layer2 during recording: the error names the call and the module") {
  REQUIRE(nsightkit::cupti_available());
  Stream s;
  try {
    GraphRecorder recorder{StreamView{s.s}, "bad"};
    forward(s.s, true);
    (void)recorder.end();
    FAIL("the recording should have failed");
  } catch (nsightkit::GraphRecordError const& e) {
    std::string const m = e.what();
    INFO(m);
    REQUIRE(m.find("recording of graph 'bad' failed") != std::string::npos);
    REQUIRE(m.find("cudaMalloc in 'model/layer2'") != std::string::npos);
    REQUIRE_FALSE(e.violations().empty());
    REQUIRE(e.violations().front().api == "cudaMalloc");
    REQUIRE(e.violations().front().module_path == "model/layer2");
  }
  (void)cudaGetLastError();
  NSIGHTKIT_CUDA_CHECK(cudaDeviceSynchronize());
}

TEST_CASE("a forked stream not joined before the end of recording is named") {
  Stream a, b;
  cudaEvent_t fork = nullptr;
  NSIGHTKIT_CUDA_CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  try {
    GraphRecorder recorder{StreamView{a.s}, "fork"};
    spin<<<1, 1, 0, a.s>>>(5 * us);
    NSIGHTKIT_CUDA_CHECK(cudaEventRecord(fork, a.s));
    NSIGHTKIT_CUDA_CHECK(cudaStreamWaitEvent(b.s, fork, 0));  // b joins the recording
    spin<<<1, 1, 0, b.s>>>(5 * us);                           // ... and is never joined back
    (void)recorder.end();
    FAIL("the recording should have failed");
  } catch (nsightkit::GraphRecordError const& e) {
    INFO(e.what());
    REQUIRE(std::string{e.what()}.find("not joined back before the recording ended") !=
            std::string::npos);
  }
  (void)cudaGetLastError();
  (void)cudaEventDestroy(fork);
}

TEST_CASE("check mode lists every unsafe call of a recording and throws nothing") {
  Stream s;
  GraphRecorder recorder{StreamView{s.s}, "checked", {{}, nsightkit::GraphCheck::check}};
  {
    ModuleScope m{"decoder"};
    spin<<<1, 1, 0, s.s>>>(5 * us);
    void* p = nullptr;
    (void)cudaMalloc(&p, 256);
    (void)cudaStreamSynchronize(s.s);
    (void)cudaFree(p);
  }
  auto graph = recorder.end();
  REQUIRE_FALSE(graph.valid());  // a recording with violations yields no graph
  auto const& v = recorder.violations();
  INFO(v.size());
  REQUIRE(v.size() >= 3);
  REQUIRE(v[0].api == "cudaMalloc");
  REQUIRE(v[0].module_path == "decoder");
  bool sync = false, free_seen = false;
  for (auto const& x : v) {
    sync = sync || x.api == "cudaStreamSynchronize";
    free_seen = free_seen || x.api == "cudaFree";
  }
  REQUIRE(sync);
  REQUIRE(free_seen);
  (void)cudaGetLastError();
}

TEST_CASE("a replay counts per module exactly the eager run's kernels, in about its busy time") {
  Stream s;
  forward(s.s);  // load the module outside the report
  NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(s.s));
  Report::disable();
  Report::reset();
  REQUIRE(Report::enable(cupti_options()));
  for (int i = 0; i < 3; ++i) {
    ScopedRange step{"step"};
    forward(s.s);
  }
  auto const eager = Report::snapshot();
  Report::reset();

  nsightkit::RecordedGraph graph;
  {
    GraphRecorder recorder{StreamView{s.s}, "forward"};
    forward(s.s);
    recorder.end(graph);
  }
  REQUIRE(graph.valid());
  Report::reset();  // the recording pass ran no GPU work worth keeping
  for (int i = 0; i < 3; ++i) {
    ScopedRange step{"step"};
    graph.launch(StreamView{s.s});
  }
  auto const replay = Report::snapshot();
  Report::disable();
  Report::reset();
  REQUIRE(graph.replays() == 3);
  for (char const* path :
       {"step/model", "step/model/layer1", "step/model/layer2", "step/model/head"}) {
    INFO(path);
    auto const* e = eager.find(path);
    auto const* r = replay.find(path);
    REQUIRE(e != nullptr);
    REQUIRE(r != nullptr);
    REQUIRE(r->work.kernels == e->work.kernels);
    REQUIRE(r->work.kernels > 0);
    double const diff = std::fabs(static_cast<double>(r->work.busy_ns - e->work.busy_ns)) /
                        static_cast<double>(e->work.busy_ns);
    INFO("eager busy " << e->work.busy_ns << " ns, replay busy " << r->work.busy_ns << " ns");
    REQUIRE(diff < 0.05);
  }
  auto const* step = replay.find("step");
  REQUIRE(step->work.kernels == eager.find("step")->work.kernels);
}

TEST_CASE("recording the same topology again updates the graph in place") {
  Stream s;
  nsightkit::RecordedGraph graph;
  for (int i = 0; i < 2; ++i) {
    GraphRecorder recorder{StreamView{s.s}, "same"};
    forward(s.s);
    recorder.end(graph);
  }
  REQUIRE(graph.instantiations() == 1);
  REQUIRE(graph.updates() == 1);
  {
    GraphRecorder recorder{StreamView{s.s}, "other"};
    spin<<<1, 1, 0, s.s>>>(5 * us);  // another topology: instantiated anew
    recorder.end(graph);
  }
  REQUIRE(graph.instantiations() == 2);
  graph.launch(StreamView{s.s});
  NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(s.s));
}
