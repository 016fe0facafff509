// Per-range cost, side by side in one process. Built three times (bench/CMakeLists.txt):
//   bench_range            no tool attached
//   bench_range_recorder   nsightkit's Recorder attached as the NVTX tool (not recording)
//   bench_range_disabled   NSIGHTKIT_DISABLE
// Every binary also measures the empty loop and the raw nvtxRangePushA/Pop pair, so ratios are
// always taken against baselines of the same run.
#include <nsightkit/nsightkit.hpp>

#include <nvtx3/nvtx3.hpp>

#include <benchmark/benchmark.h>

namespace {

void BM_empty_loop(benchmark::State& state) {
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    ++i;
  }
}
BENCHMARK(BM_empty_loop);

void BM_raw_nvtx_push_pop(benchmark::State& state) {
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    nvtxRangePushA("raw");
    nvtxRangePop();
    ++i;
  }
}
BENCHMARK(BM_raw_nvtx_push_pop);

void BM_nvtx3_scoped_range(benchmark::State& state) {
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    nvtx3::scoped_range r{"nvtx3"};
    ++i;
  }
}
BENCHMARK(BM_nvtx3_scoped_range);

void BM_ScopedRange_static(benchmark::State& state) {
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    nsightkit::ScopedRange r{"static"};
    ++i;
  }
}
BENCHMARK(BM_ScopedRange_static);

void BM_ScopedRange_formatted(benchmark::State& state) {
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    nsightkit::ScopedRange r{"layer{}/conv{}", i, i + 1};
    ++i;
  }
}
BENCHMARK(BM_ScopedRange_formatted);

void BM_NSIGHTKIT_RANGE_formatted(benchmark::State& state) {
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    NSIGHTKIT_RANGE("step {}", i);
    ++i;
  }
}
BENCHMARK(BM_NSIGHTKIT_RANGE_formatted);

void BM_NSIGHTKIT_FUNC_RANGE(benchmark::State& state) {
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    NSIGHTKIT_FUNC_RANGE();
    ++i;
  }
}
BENCHMARK(BM_NSIGHTKIT_FUNC_RANGE);

void BM_ScopedRange_attributes(benchmark::State& state) {
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    nsightkit::ScopedRange r{{nsightkit::Color::rgb(1, 2, 3), nsightkit::Payload{i}}, "attrs"};
    ++i;
  }
}
BENCHMARK(BM_ScopedRange_attributes);

void BM_UniqueRange_static(benchmark::State& state) {
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    nsightkit::UniqueRange r{"unique"};
    ++i;
  }
}
BENCHMARK(BM_UniqueRange_static);

void BM_mark_static(benchmark::State& state) {
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    nsightkit::mark("mark");
    ++i;
  }
}
BENCHMARK(BM_mark_static);

}  // namespace

BENCHMARK_MAIN();
