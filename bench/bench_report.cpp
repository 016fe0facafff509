// Per-range cost of the in-process report, side by side in one process: the same ScopedRange with
// the report off (no sink registered: the foundation's fast path) and on (CPU aggregation, with
// trace events, with formatted names, 8 threads at once), and — where a CUDA device exists — with
// GPU timing on a stream (two pooled CUDA events per range). Target: <= 100 ns per CPU-only range.
// The BM_attribution_ rows measure what the CUPTI source adds on the launching thread, without a
// GPU: a stand-in source takes the place of CUPTI, and each "launch" is the call nsightkit's
// launch callback makes (note_launch); CUPTI's own callback dispatch is not in them.
#include <nsightkit/detail/cupti/attribution.hpp>
#include <nsightkit/detail/report/clock.hpp>
#include <nsightkit/detail/report/owner_lock.hpp>
#include <nsightkit/report.hpp>

#include <cstdint>
#include <optional>

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

// The lock a range takes twice on its own thread's data: the owner's side of the report's lock
// (no locked instruction where membarrier is ready), against the spin lock it replaced.
void lock_pairs(benchmark::State& state, nsightkit::detail::report::OwnerLock& lock) {
  int i = 0;
  for (auto _ : state) {
    lock.lock_owner();
    benchmark::DoNotOptimize(++i);
    lock.unlock_owner();
  }
}

void BM_thread_lock_owner(benchmark::State& state) {
  nsightkit::detail::report::OwnerLock lock;
  lock_pairs(state, lock);
  state.SetLabel(lock.asymmetric() ? "asymmetric" : "spin: membarrier not ready");
}
BENCHMARK(BM_thread_lock_owner);

void BM_thread_lock_spin(benchmark::State& state) {
  nsightkit::detail::report::OwnerLock lock{false};
  lock_pairs(state, lock);
}
BENCHMARK(BM_thread_lock_spin);

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

namespace nr = nsightkit::detail::report;

// The attribution half of the CUPTI source, with no CUPTI under it.
class StandIn final : public nr::AttributionSource {
 public:
  [[nodiscard]] char const* name() const noexcept override { return "cupti"; }
  void launch(std::uint32_t correlation, std::int64_t when) noexcept {
    note_launch(correlation, when);
  }
};
StandIn* stand_in = nullptr;
nr::GpuSource* provide_stand_in() { return stand_in; }

struct AttributionOn {
  AttributionOn() {
    if (stand_in == nullptr) stand_in = new StandIn{};  // lives on: threads may point into it
    nr::cupti_provider.store(&provide_stand_in);
    auto o = quiet_options();
    o.gpu_source = nsightkit::GpuSourceKind::cupti;
    nsightkit::Report::reset();
    nsightkit::Report::enable(o);
  }
  ~AttributionOn() {
    nsightkit::Report::disable();
    nsightkit::Report::reset();
    nr::cupti_provider.store(nullptr);
  }
  AttributionOn(AttributionOn const&) = delete;
  AttributionOn& operator=(AttributionOn const&) = delete;
};

// Settles what the loop recorded (outside the timing) every so often, as the report's flush
// would: instances of ranges that launched are kept until then.
template <typename Body>
void attribution_loop(benchmark::State& state, bool in_range, Body body) {
  AttributionOn on;
  std::optional<nsightkit::ScopedRange> outer;
  if (in_range) outer.emplace("loop");
  if (nsightkit::Report::snapshot().gpu.source != "cupti") {
    state.SkipWithError("the stand-in did not become the report's GPU source");
    return;
  }
  std::uint32_t correlation = 1;
  for (auto _ : state) {
    body(correlation);
    if ((correlation & 0xffffu) == 0) {
      state.PauseTiming();
      (void)nsightkit::Report::snapshot();
      state.ResumeTiming();
    }
    ++correlation;
  }
}

// A range around each launch, as bench_cupti's launch_bound_range does on the GPU.
void BM_attribution_range_launch(benchmark::State& state) {
  attribution_loop(state, false, [](std::uint32_t c) {
    nsightkit::ScopedRange r{"launch"};
    stand_in->launch(c, nr::clock_now(nr::process_tsc()));
  });
}
BENCHMARK(BM_attribution_range_launch);

// The launch callback's work alone, inside one long range.
void BM_attribution_launch(benchmark::State& state) {
  attribution_loop(state, true,
                   [](std::uint32_t c) { stand_in->launch(c, nr::clock_now(nr::process_tsc())); });
}
BENCHMARK(BM_attribution_launch);

// A range with the CUPTI source on but no launch inside it.
void BM_attribution_range(benchmark::State& state) {
  attribution_loop(state, false, [](std::uint32_t) { nsightkit::ScopedRange r{"layer"}; });
}
BENCHMARK(BM_attribution_range);

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
