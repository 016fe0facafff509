// Pinned memory, side by side in one process (needs a CUDA device; without one it says so and
// exits 0):
//   alloc_free/cudaHostAlloc/<size>   cudaHostAlloc + cudaFreeHost per iteration (the baseline)
//   alloc_free/pool/<size>            PinnedMemoryPool allocate + deallocate, reused block
//   alloc_free/pool_stream/<size>     the same, freed naming an idle stream (event record + query)
//   h2d/pool_block/<size>             H2D copy from a pool block
//   h2d/cudaHostAlloc/<size>          H2D copy from a buffer straight from cudaHostAlloc
//   h2d/pageable/<size>               H2D copy from ordinary (pageable) memory
// Copies are timed on the host, from enqueue to cudaStreamSynchronize. At the end the binary
// prints the ratios the targets are about (pool reuse ≥ 1000× faster than cudaHostAlloc+free;
// H2D from a pool block ≥ 0.95× a fresh cudaHostAlloc buffer), computed from the medians of this
// run. The console shows the table and the ratios; --benchmark_out=<file> also writes JSON.
#include <nsightkit/pinned.hpp>

#include <benchmark/benchmark.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <string>
#include <vector>

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

std::string size_name(std::size_t bytes) { return std::to_string(bytes / MiB) + "MiB"; }

// Skips the benchmark with CUDA's message when a call fails.
bool ok(benchmark::State& state, cudaError_t e, char const* what) {
  if (e == cudaSuccess) return true;
  std::string const m =
      std::string{what} + ": " + cudaGetErrorName(e) + " " + cudaGetErrorString(e);
  state.SkipWithError(m.c_str());
  return false;
}

void alloc_free_cuda(benchmark::State& state, std::size_t bytes) {
  for (auto _ : state) {
    void* p = nullptr;
    if (!ok(state, cudaHostAlloc(&p, bytes, cudaHostAllocDefault), "cudaHostAlloc")) break;
    benchmark::DoNotOptimize(p);
    if (!ok(state, cudaFreeHost(p), "cudaFreeHost")) break;
  }
}

void alloc_free_pool(benchmark::State& state, std::size_t bytes, bool on_stream) {
  nsightkit::PinnedMemoryPool pool;
  cudaStream_t stream{};
  if (on_stream &&
      !ok(state, cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate"))
    return;
  std::uint64_t warm = 0;
  try {
    pool.deallocate(pool.allocate(bytes), bytes);  // warm: the block exists before timing
    if (on_stream) {
      // Warm the stream-ordered case too: freed blocks wait for their event, so the pool grows
      // to the few blocks in flight at once; grow it before timing, not during.
      for (int i = 0; i < 256; ++i)
        pool.deallocate(pool.allocate(bytes), bytes, nsightkit::StreamView{stream});
      NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
    }
    warm = pool.stats().host_alloc_calls;
    for (auto _ : state) {
      void* p = pool.allocate(bytes);
      benchmark::DoNotOptimize(p);
      if (on_stream) {
        pool.deallocate(p, bytes, nsightkit::StreamView{stream});
      } else {
        pool.deallocate(p, bytes);
      }
    }
  } catch (std::exception const& e) {
    state.SkipWithError(e.what());
  }
  auto const s = pool.stats();
  state.counters["cudaHostAlloc_timed"] = static_cast<double>(s.host_alloc_calls - warm);
  state.counters["blocks"] = static_cast<double>(s.host_alloc_calls);
  state.counters["hit_rate"] =
      s.allocations == 0 ? 0.0
                         : static_cast<double>(s.cache_hits) / static_cast<double>(s.allocations);
  if (on_stream) (void)cudaStreamDestroy(stream);
}

// Times H2D copies of `bytes` from `src`.
void h2d(benchmark::State& state, void const* src, std::size_t bytes, void* dst,
         cudaStream_t stream) {
  for (auto _ : state) {
    if (!ok(state, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream),
            "cudaMemcpyAsync"))
      break;
    if (!ok(state, cudaStreamSynchronize(stream), "cudaStreamSynchronize")) break;
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(bytes));
}

double seconds_per_unit(benchmark::TimeUnit u) {
  switch (u) {
    case benchmark::kNanosecond: return 1e-9;
    case benchmark::kMicrosecond: return 1e-6;
    case benchmark::kMillisecond: return 1e-3;
    case benchmark::kSecond: return 1.0;
  }
  return 1.0;
}

// The console table, then the target ratios from the medians of this run.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(std::vector<Run> const& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (Run const& r : runs) {
      if (r.error_occurred) continue;
      double const t = r.GetAdjustedRealTime() * seconds_per_unit(r.time_unit);
      if (r.run_type == Run::RT_Iteration) {
        seconds_[r.run_name.function_name].push_back(t);
      } else if (r.aggregate_name == "median") {
        // With --benchmark_report_aggregates_only only the aggregates arrive.
        medians_[r.run_name.function_name] = t;
      }
    }
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\nRatios (medians of this run):\n");
    for (std::size_t bytes : {1 * MiB, 64 * MiB}) {
      std::string const sz = size_name(bytes);
      ratio("pool reuse vs cudaHostAlloc+cudaFreeHost, " + sz + " (target >= 1000x)",
            "alloc_free/cudaHostAlloc/" + sz, "alloc_free/pool/" + sz, "x faster");
      ratio("pool reuse, freed on a stream, vs cudaHostAlloc+cudaFreeHost, " + sz,
            "alloc_free/cudaHostAlloc/" + sz, "alloc_free/pool_stream/" + sz, "x faster");
    }
    for (std::size_t bytes : {1 * MiB, 64 * MiB}) {
      std::string const sz = size_name(bytes);
      bandwidth("h2d/pool_block/" + sz, bytes);
      bandwidth("h2d/cudaHostAlloc/" + sz, bytes);
      bandwidth("h2d/pageable/" + sz, bytes);
      ratio("H2D from a pool block vs a fresh cudaHostAlloc buffer, " + sz + " (target >= 0.95x)",
            "h2d/pool_block/" + sz, "h2d/cudaHostAlloc/" + sz, "x the bandwidth");
      ratio("H2D from a pool block vs pageable memory, " + sz, "h2d/pool_block/" + sz,
            "h2d/pageable/" + sz, "x the bandwidth");
    }
  }

 private:
  double median(std::string const& name) const {
    auto it = seconds_.find(name);
    if (it == seconds_.end() || it->second.empty()) {
      auto m = medians_.find(name);
      return m == medians_.end() ? -1.0 : m->second;
    }
    std::vector<double> v = it->second;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }

  // For alloc_free, a is the baseline and b the candidate: the speed-up time(a)/time(b).
  // For h2d, the bandwidth of a relative to b: time(b)/time(a).
  void ratio(std::string const& label, std::string const& a, std::string const& b,
             char const* unit) const {
    double const ta = median(a);
    double const tb = median(b);
    if (ta <= 0 || tb <= 0) {
      std::printf("  %-80s n/a (not run)\n", label.c_str());
      return;
    }
    bool const is_bandwidth = a.rfind("h2d/", 0) == 0;
    double const r = is_bandwidth ? tb / ta : ta / tb;
    std::printf("  %-80s %10.3f %s\n", label.c_str(), r, unit);
  }

  void bandwidth(std::string const& name, std::size_t bytes) const {
    double const t = median(name);
    if (t <= 0) return;
    std::printf("  %-80s %10.2f GB/s\n", name.c_str(), static_cast<double>(bytes) / t / 1e9);
  }

  std::map<std::string, std::vector<double>> seconds_;  // per benchmark: seconds per iteration
  std::map<std::string, double> medians_;               // per benchmark: the median aggregate
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  int devices = 0;
  cudaError_t const status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0) {
    std::printf("bench_pinned: no usable CUDA device (%s: %s); nothing to measure.\n",
                status == cudaSuccess ? "cudaGetDeviceCount" : cudaGetErrorName(status),
                status == cudaSuccess ? "0 devices" : cudaGetErrorString(status));
    return 0;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
    std::printf("bench_pinned on CUDA device 0: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
  }

  // Shared by the copy benchmarks: sources of each kind, one device buffer, one stream.
  std::size_t const sizes[] = {1 * MiB, 64 * MiB};
  std::size_t const largest = 64 * MiB;
  cudaStream_t stream{};
  void* device = nullptr;
  void* fresh = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess ||
      cudaMalloc(&device, largest) != cudaSuccess ||
      cudaHostAlloc(&fresh, largest, cudaHostAllocDefault) != cudaSuccess) {
    std::printf("bench_pinned: CUDA setup failed: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  std::vector<unsigned char> pageable(largest);
  std::memset(pageable.data(), 1, largest);  // resident pages: measure the copy, not page faults
  std::memset(fresh, 1, largest);
  nsightkit::PinnedMemoryPool pool;
  void* block = pool.allocate(largest);
  std::memset(block, 1, largest);

  for (std::size_t bytes : sizes) {
    std::string const sz = size_name(bytes);
    benchmark::RegisterBenchmark(("alloc_free/cudaHostAlloc/" + sz).c_str(),
                                 [bytes](benchmark::State& s) { alloc_free_cuda(s, bytes); })
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("alloc_free/pool/" + sz).c_str(),
                                 [bytes](benchmark::State& s) { alloc_free_pool(s, bytes, false); })
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("alloc_free/pool_stream/" + sz).c_str(),
                                 [bytes](benchmark::State& s) { alloc_free_pool(s, bytes, true); })
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }
  for (std::size_t bytes : sizes) {
    std::string const sz = size_name(bytes);
    benchmark::RegisterBenchmark(("h2d/pool_block/" + sz).c_str(),
                                 [=](benchmark::State& s) { h2d(s, block, bytes, device, stream); })
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("h2d/cudaHostAlloc/" + sz).c_str(),
                                 [=](benchmark::State& s) { h2d(s, fresh, bytes, device, stream); })
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
    unsigned char const* src = pageable.data();
    benchmark::RegisterBenchmark(("h2d/pageable/" + sz).c_str(),
                                 [=](benchmark::State& s) { h2d(s, src, bytes, device, stream); })
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }

  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  pool.deallocate(block, largest);
  (void)cudaFreeHost(fresh);
  (void)cudaFree(device);
  (void)cudaStreamDestroy(stream);
  return 0;
}
