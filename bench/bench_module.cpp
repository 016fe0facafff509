// Module hooks' cost, side by side with plain ranges in one process. Built three times
// (bench/module.cmake):
//   bench_module            no tool attached        (target: ModuleScope <= 1.3x ScopedRange)
//   bench_module_recorder   the Recorder attached as the NVTX tool (not recording)
//   bench_module_disabled   NSIGHTKIT_DISABLE
// Baselines of the same run: the empty loop, the raw nvtxRangePushA/Pop pair, a plain ScopedRange,
// and the direct call of the module that Hooked wraps.
// Order matters: module-path tracking is sticky for the process and starts with the first hook
// (or track_module_paths()), so the benchmarks that turn it on are registered last; everything
// before them measures scopes that nothing observes (with no tool attached).
#include <nsightkit/hooked.hpp>
#include <nsightkit/module.hpp>
#include <nsightkit/range.hpp>

#include <nvtx3/nvtx3.hpp>

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

namespace {

namespace nsk = nsightkit;

struct Conv {
  int scale;
  int forward(int x) const { return x * scale + 1; }
};

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

// ---- one scope: the 1.3x target compares these two ----
void BM_ScopedRange_static(benchmark::State& state) {
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    nsk::ScopedRange r{"conv1"};
    ++i;
  }
}
BENCHMARK(BM_ScopedRange_static);

void BM_ModuleScope_default_hooks(benchmark::State& state) {
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    nsk::ModuleScope m{"conv1"};
    ++i;
  }
}
BENCHMARK(BM_ModuleScope_default_hooks);

// ---- three nested scopes (a block calling a layer calling a conv) ----
void BM_ScopedRange_nested3(benchmark::State& state) {
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    nsk::ScopedRange a{"layer1"};
    nsk::ScopedRange b{"0"};
    nsk::ScopedRange c{"conv1"};
    ++i;
  }
}
BENCHMARK(BM_ScopedRange_nested3);

void BM_ModuleScope_nested3(benchmark::State& state) {
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    nsk::ModuleScope a{"layer1"};
    nsk::ModuleScope b{"0"};
    nsk::ModuleScope c{"conv1"};
    ++i;
  }
}
BENCHMARK(BM_ModuleScope_nested3);

// ---- Hooked<M> call against the direct call of the same module ----
void BM_direct_call(benchmark::State& state) {
  Conv conv{3};
  int x = 1;
  for (auto _ : state) {
    benchmark::DoNotOptimize(conv);
    x = conv.forward(x) & 0xFFFF;
    benchmark::DoNotOptimize(x);
  }
}
BENCHMARK(BM_direct_call);

void BM_ScopedRange_around_direct_call(benchmark::State& state) {
  Conv conv{3};
  int x = 1;
  for (auto _ : state) {
    benchmark::DoNotOptimize(conv);
    nsk::ScopedRange r{"conv1"};
    x = conv.forward(x) & 0xFFFF;
    benchmark::DoNotOptimize(x);
  }
}
BENCHMARK(BM_ScopedRange_around_direct_call);

void BM_Hooked_call(benchmark::State& state) {
  nsk::Hooked<Conv> conv{"conv1", 3};
  int x = 1;
  for (auto _ : state) {
    benchmark::DoNotOptimize(conv);
    x = conv(x) & 0xFFFF;
    benchmark::DoNotOptimize(x);
  }
}
BENCHMARK(BM_Hooked_call);

void BM_instrument_call(benchmark::State& state) {
  auto fn = nsk::instrument([](int v) { return v * 3 + 1; }, "fetch");
  int x = 1;
  for (auto _ : state) {
    benchmark::DoNotOptimize(fn);
    x = fn(x) & 0xFFFF;
    benchmark::DoNotOptimize(x);
  }
}
BENCHMARK(BM_instrument_call);

// ---- formatted names and call-site names (newer API: skipped when this file is built against
// an nsightkit without them, to compare the common rows with an older version) ----
#if defined(NSIGHTKIT_MODULE)
void BM_ScopedRange_formatted(benchmark::State& state) {
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    nsk::ScopedRange r{"layer{}", i & 63};
    ++i;
  }
}
BENCHMARK(BM_ScopedRange_formatted);

void BM_ModuleScope_formatted(benchmark::State& state) {
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    nsk::ModuleScope m{"layer{}", i & 63};
    ++i;
  }
}
BENCHMARK(BM_ModuleScope_formatted);

void BM_instrument_as_call(benchmark::State& state) {
  auto fn = nsk::instrument([](int v) { return v * 3 + 1; }, "fetch");
  int x = 1;
  for (auto _ : state) {
    benchmark::DoNotOptimize(fn);
    x = fn.as("prefetch")(x) & 0xFFFF;
    benchmark::DoNotOptimize(x);
  }
}
BENCHMARK(BM_instrument_as_call);
#endif

// ---- from here on, scopes keep the per-thread module stack (tracking is sticky) ----
void BM_ModuleScope_tracked(benchmark::State& state) {
  nsk::track_module_paths();
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    nsk::ModuleScope m{"conv1"};
    ++i;
  }
}
BENCHMARK(BM_ModuleScope_tracked);

#if defined(NSIGHTKIT_MODULE)
void BM_ModuleScope_formatted_tracked(benchmark::State& state) {  // formatted: observed now
  nsk::track_module_paths();
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    nsk::ModuleScope m{"layer{}", i & 63};
    ++i;
  }
}
BENCHMARK(BM_ModuleScope_formatted_tracked);
#endif

// ---- with user hooks installed (paths resolved from the interned table, counted) ----
void BM_ModuleScope_one_global_hook(benchmark::State& state) {
  int sink = 0;
  auto h = nsk::add_pre_hook([&sink](nsk::ModuleInfo const& m) { sink += m.depth; });
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    nsk::ModuleScope m{"conv1"};
    ++i;
  }
  benchmark::DoNotOptimize(sink);
}
BENCHMARK(BM_ModuleScope_one_global_hook);

void BM_ModuleScope_one_global_hook_nested3(benchmark::State& state) {
  int sink = 0;
  auto h = nsk::add_pre_hook([&sink](nsk::ModuleInfo const& m) { sink += m.depth; });
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    nsk::ModuleScope a{"layer1"};
    nsk::ModuleScope b{"0"};
    nsk::ModuleScope c{"conv1"};
    ++i;
  }
  benchmark::DoNotOptimize(sink);
}
BENCHMARK(BM_ModuleScope_one_global_hook_nested3);

// One parent with 64 children called in turn (a wide layer): each call finds its own path.
void BM_ModuleScope_one_global_hook_64_siblings(benchmark::State& state) {
  std::vector<std::string> names;
  for (int n = 0; n < 64; ++n) names.push_back("block" + std::to_string(n));
  std::size_t sink = 0;
  auto h = nsk::add_pre_hook([&sink](nsk::ModuleInfo const& m) { sink += m.path.size(); });
  nsk::ModuleScope parent{"wide"};
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(i);
    nsk::ModuleScope m{names[i & 63]};
    ++i;
  }
  benchmark::DoNotOptimize(sink);
}
BENCHMARK(BM_ModuleScope_one_global_hook_64_siblings);

void BM_ModuleScope_current_module_path(benchmark::State& state) {  // tracked, no hook
  std::size_t sink = 0;
  nsk::ModuleScope outer{"backbone"};
  for (auto _ : state) {
    nsk::ModuleScope m{"conv1"};
    sink += nsk::current_module_path().size();
    benchmark::DoNotOptimize(sink);
  }
}
BENCHMARK(BM_ModuleScope_current_module_path);

void BM_Hooked_call_one_instance_hook(benchmark::State& state) {
  nsk::Hooked<Conv> conv{"conv1", 3};
  int sink = 0;
  auto h = conv.add_pre_hook(
      [&sink](nsk::ModuleInfo const& m) { sink += static_cast<int>(m.call_count); });
  int x = 1;
  for (auto _ : state) {
    benchmark::DoNotOptimize(conv);
    x = conv(x) & 0xFFFF;
    benchmark::DoNotOptimize(x);
  }
  benchmark::DoNotOptimize(sink);
}
BENCHMARK(BM_Hooked_call_one_instance_hook);

}  // namespace

BENCHMARK_MAIN();
