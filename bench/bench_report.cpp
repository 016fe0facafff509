// Per-range cost of the in-process report, side by side in one process: the same ScopedRange with
// the report off (no sink registered: the foundation's fast path) and on (CPU aggregation, with
// trace events, with formatted names, 8 threads at once), and — where a CUDA device exists — with
// GPU timing on a stream (two pooled CUDA events per range). Target: <= 100 ns per CPU-only range.
#include <nsightkit/detail/report/clock.hpp>
#include <nsightkit/report.hpp>

#include <benchmark/benchmark.h>

#if defined(NSK_BENCH_GPU)
#include <cuda_runtime_api.h>
#endif

namespace {

nsightkit::ReportOptions quiet_options() {
  nsightkit::ReportOptions o;
  o.table.clear();  // nothing printed or written: only the recording is measured
  o.at_exit = false;
  return o;
}

struct ReportOn {
  explicit ReportOn(nsightkit::ReportOptions const& o) {
    nsightkit::Report::reset();
    nsightkit::Report::enable(o);
  }
  ~ReportOn() {
    nsightkit::Report::disable();
    nsightkit::Report::reset();
  }
  ReportOn(ReportOn const&) = delete;
  ReportOn& operator=(ReportOn const&) = delete;
};

void BM_empty_loop(benchmark::State& state) {
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    ++i;
  }
}
BENCHMARK(BM_empty_loop);

// The floor of a recorded range: it reads the report's clock twice.
void BM_report_clock(benchmark::State& state) {
  auto const& tsc = nsightkit::detail::report::process_tsc();
  for (auto _ : state) benchmark::DoNotOptimize(nsightkit::detail::report::clock_now(tsc));
  state.SetLabel(tsc.usable ? "tsc" : "steady_clock: " + tsc.why);
}
BENCHMARK(BM_report_clock);

void BM_steady_clock(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(nsightkit::detail::report::steady_now());
}
BENCHMARK(BM_steady_clock);

void BM_range_report_off(benchmark::State& state) {
  nsightkit::Report::disable();
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    nsightkit::ScopedRange r{"layer"};
    ++i;
  }
}
BENCHMARK(BM_range_report_off);

void BM_range_report_on(benchmark::State& state) {
  ReportOn on{quiet_options()};
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    nsightkit::ScopedRange r{"layer"};
    ++i;
  }
}
BENCHMARK(BM_range_report_on);

// A realistic depth: the measured range is the innermost of three open ones.
void BM_range_report_on_depth3(benchmark::State& state) {
  ReportOn on{quiet_options()};
  nsightkit::ScopedRange a{"model"};
  nsightkit::ScopedRange b{"encoder"};
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    nsightkit::ScopedRange r{"attention"};
    ++i;
  }
}
BENCHMARK(BM_range_report_on_depth3);

void BM_range_report_on_trace(benchmark::State& state) {
  auto o = quiet_options();
  o.record_trace = true;
  o.max_trace_events = std::size_t{1} << 22;
  ReportOn on{o};
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    nsightkit::ScopedRange r{"layer"};
    ++i;
  }
}
BENCHMARK(BM_range_report_on_trace)->Iterations(1 << 21);

void BM_range_formatted_report_off(benchmark::State& state) {
  nsightkit::Report::disable();
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    nsightkit::ScopedRange r{"layer{}", i & 7};
    ++i;
  }
}
BENCHMARK(BM_range_formatted_report_off);

void BM_range_formatted_report_on(benchmark::State& state) {
  ReportOn on{quiet_options()};
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    nsightkit::ScopedRange r{"layer{}", i & 7};
    ++i;
  }
}
BENCHMARK(BM_range_formatted_report_on);

// Eight threads recording at once: per-thread buffers, so the cost per range should not grow.
void BM_range_report_on_threads(benchmark::State& state) {
  static ReportOn* on = nullptr;
  if (state.thread_index() == 0) on = new ReportOn{quiet_options()};
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    nsightkit::ScopedRange r{"layer"};
    ++i;
  }
  if (state.thread_index() == 0) {
    delete on;
    on = nullptr;
  }
}
BENCHMARK(BM_range_report_on_threads)->Threads(8)->UseRealTime();

#if defined(NSK_BENCH_GPU)
bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

// GPU timing: two pooled events recorded per range on an otherwise idle stream.
void BM_range_report_gpu(benchmark::State& state) {
  if (!have_device()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  cudaStream_t stream{};
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  {
    ReportOn on{quiet_options()};
    nsightkit::CurrentStream current{nsightkit::StreamView{stream}};
    int i = 0;
    for (auto _ : state) {
      benchmark::DoNotOptimize(i);
      nsightkit::ScopedRange r{"layer"};
      ++i;
    }
    state.counters["events_created"] =
        static_cast<double>(nsightkit::Report::snapshot().gpu.events_created);
  }
  cudaStreamDestroy(stream);
}
BENCHMARK(BM_range_report_gpu);

void BM_range_gpu_report_off(benchmark::State& state) {
  if (!have_device()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  cudaStream_t stream{};
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  nsightkit::Report::disable();
  {
    nsightkit::CurrentStream current{nsightkit::StreamView{stream}};
    int i = 0;
    for (auto _ : state) {
      benchmark::DoNotOptimize(i);
      nsightkit::ScopedRange r{"layer"};
      ++i;
    }
  }
  cudaStreamDestroy(stream);
}
BENCHMARK(BM_range_gpu_report_off);

// For scale: one bare cudaEventRecord (the report records two per range).
void BM_cudaEventRecord(benchmark::State& state) {
  if (!have_device()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  cudaStream_t stream{};
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  cudaEvent_t e{};
  cudaEventCreate(&e);
  for (auto _ : state) cudaEventRecord(e, stream);
  cudaStreamSynchronize(stream);
  cudaEventDestroy(e);
  cudaStreamDestroy(stream);
}
BENCHMARK(BM_cudaEventRecord);
#endif

}  // namespace

BENCHMARK_MAIN();
