// What attributing CUDA-graph replays to modules costs, and what a graph saves over eager
// launches, in one process:
//
//   graph/report:0    replay of a recorded graph of 50 small kernels (5 modules of 10), then a
//                     stream synchronize; the report off (CUPTI collection disabled)
//   graph/report:1    the same graph with the report on (gpu=cupti): every replayed kernel is
//                     collected and attributed to the module that recorded it
//   eager/report:0|1  the same 50 kernels launched one by one inside the same module scopes
//
// The second argument is the kernels' length: 0 (empty kernels: launch-bound) or 2000 ns (a
// spin kernel). The graph is recorded once, with the report on (so its nodes carry their module
// paths); "report off" disables the report around the measurement (Report::disable stops CUPTI's
// collection), so off and on replay the very same graph and can be interleaved
// (--benchmark_enable_random_interleaving). scripts/gpu/graphs.sh runs it and prints the ratios:
// attribution overhead per replay = graph/report:1 / graph/report:0, eager / graph.
#include <nsightkit/cupti.hpp>
#include <nsightkit/graph.hpp>
#include <nsightkit/module.hpp>
#include <nsightkit/report.hpp>

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <exception>
#include <map>
#include <stdexcept>
#include <string>

namespace {

constexpr int modules = 5;
constexpr int kernels_per_module = 10;

__global__ void spin(long long ns) {
  if (ns <= 0) return;
  unsigned long long start = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (;;) {
    unsigned long long now = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (static_cast<long long>(now - start) >= ns) break;
  }
}

char const* const module_names[modules] = {"embed", "block0", "block1", "block2", "head"};

/// The "model": 5 module scopes of 10 kernels each, under "model".
void forward(cudaStream_t s, long long ns) {
  nsightkit::ModuleScope const model{"model"};
  for (char const* name : module_names) {
    nsightkit::ModuleScope const m{name};
    for (int k = 0; k < kernels_per_module; ++k) spin<<<1, 32, 0, s>>>(ns);
  }
}

nsightkit::ReportOptions report_options() {
  nsightkit::ReportOptions o;
  o.table.clear();
  o.at_exit = false;
  o.gpu_source = nsightkit::GpuSourceKind::cupti;
  return o;
}

/// The stream and one recorded graph per kernel length, made once (with the report on); the
/// reason it could not be, or "".
struct Setup {
  cudaStream_t stream{};
  std::map<long long, nsightkit::RecordedGraph> graphs;
  std::string why;
};

Setup& setup() {
  static Setup* const s = [] {
    auto* st = new Setup{};  // leaked: graphs outlive every benchmark, CUDA tears down at exit
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
      (void)cudaGetLastError();
      st->why = "no GPU";
      return st;
    }
    if (cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking) != cudaSuccess) {
      st->why = "cudaStreamCreateWithFlags failed";
      return st;
    }
    if (!nsightkit::Report::enable(report_options())) {
      st->why = "Report::enable failed";
      return st;
    }
    std::string const reason = nsightkit::cupti_unavailable_reason();
    if (!reason.empty()) {
      st->why = "CUPTI: " + reason;
      return st;
    }
    try {
      for (long long ns : {0LL, 2000LL}) {
        forward(st->stream, ns);  // load the kernel, warm up
        if (cudaStreamSynchronize(st->stream) != cudaSuccess) throw std::runtime_error{"sync"};
        nsightkit::GraphRecorder recorder{nsightkit::StreamView{st->stream},
                                          "forward " + std::to_string(ns) + " ns"};
        forward(st->stream, ns);
        recorder.end(st->graphs[ns]);
      }
    } catch (std::exception const& e) {
      st->why = std::string{"recording failed: "} + e.what();
    }
    nsightkit::Report::disable();
    nsightkit::Report::reset();
    return st;
  }();
  return *s;
}

/// Turns the report on or off for one benchmark; drops what an earlier one collected.
void report(bool on) {
  nsightkit::Report::disable();
  nsightkit::Report::reset();
  if (on) (void)nsightkit::Report::enable(report_options());
}

void finish(benchmark::State& state, bool on) {
  if (on) {
    // Make the report settle the collected work (part of its cost, outside the timed loop).
    nsightkit::ReportSnapshot const snap = nsightkit::Report::snapshot();
    nsightkit::PathStats const* p = snap.find("model/block1");
    state.counters["block1_kernels_per_iteration"] =
        p != nullptr && state.iterations() > 0
            ? static_cast<double>(p->work.kernels) / static_cast<double>(state.iterations())
            : 0.0;
  }
  report(false);
  state.counters["us_per_iteration"] =
      benchmark::Counter(static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["kernels"] = modules * kernels_per_module;
}

void graph(benchmark::State& state) {
  Setup& s = setup();
  if (!s.why.empty()) {
    state.SkipWithError(s.why.c_str());
    return;
  }
  bool const on = state.range(0) != 0;
  nsightkit::RecordedGraph& g = s.graphs.at(state.range(1));
  report(on);
  for (auto _ : state) {
    g.launch(nsightkit::StreamView{s.stream});
    if (cudaStreamSynchronize(s.stream) != cudaSuccess) {
      state.SkipWithError("cudaStreamSynchronize failed");
      break;
    }
  }
  finish(state, on);
}

void eager(benchmark::State& state) {
  Setup& s = setup();
  if (!s.why.empty()) {
    state.SkipWithError(s.why.c_str());
    return;
  }
  bool const on = state.range(0) != 0;
  long long const ns = state.range(1);
  report(on);
  for (auto _ : state) {
    forward(s.stream, ns);
    if (cudaStreamSynchronize(s.stream) != cudaSuccess) {
      state.SkipWithError("cudaStreamSynchronize failed");
      break;
    }
  }
  finish(state, on);
}

}  // namespace

BENCHMARK(graph)
    ->ArgNames({"report", "kernel_ns"})
    ->ArgsProduct({{0, 1}, {0, 2000}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime()
    ->MinTime(0.5);
BENCHMARK(eager)
    ->ArgNames({"report", "kernel_ns"})
    ->ArgsProduct({{0, 1}, {0, 2000}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime()
    ->MinTime(0.5);

BENCHMARK_MAIN();
