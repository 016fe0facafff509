// What CUPTI-based attribution costs per kernel launch, against the floors it stands on. One
// collection mode per process (CUPTI's state cannot be undone within one), chosen by
// NSK_CUPTI_MODE; bench/run_cupti_benchmarks.sh runs every mode, interleaved, and prints ratios:
//
//   none           no CUPTI at all: the launch cost of this machine
//   activity       CUPTI kernel activity records only (the floor of any CUPTI-based tool)
//   activity_api   + runtime and driver API activity records: the floor of the "join API records
//                  afterwards" design (thread and timestamps of every launch call)
//   nsightkit      the report with gpu=cupti: kernel/copy/memset/memory activity plus a callback
//                  per launch call noting correlation id -> range (the design nsightkit uses)
//
// Each benchmark launches kernels in a loop (an empty kernel: launch-bound; a 5 us kernel:
// GPU-bound) inside one range, or with a range around every launch ("_range" benchmarks).
#include <nsightkit/cupti.hpp>
#include <nsightkit/report.hpp>

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>
#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

__global__ void empty_kernel() {}

__global__ void spin(long long ns) {
  unsigned long long start = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (;;) {
    unsigned long long now = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (static_cast<long long>(now - start) >= ns) break;
  }
}

std::atomic<std::uint64_t> raw_records{0};

void CUPTIAPI raw_request(std::uint8_t** buffer, std::size_t* size, std::size_t* max) {
  *size = std::size_t{8} << 20;
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, *size));
  *max = 0;
}

void CUPTIAPI raw_complete(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t,
                           std::size_t valid) {
  CUpti_Activity* r = nullptr;
  std::uint64_t n = 0;
  while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) ++n;
  raw_records.fetch_add(n);
  std::free(buffer);
}

std::string mode() {
  char const* m = std::getenv("NSK_CUPTI_MODE");
  return m != nullptr ? m : "none";
}

/// Sets up the mode's collection once; the reason it could not, or "".
std::string const& setup() {
  static std::string const why = [] {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return std::string{"no GPU"};
    std::string const m = mode();
    if (m == "none") return std::string{};
    if (m == "activity" || m == "activity_api") {
      if (cuptiActivityRegisterCallbacks(&raw_request, &raw_complete) != CUPTI_SUCCESS)
        return std::string{"cuptiActivityRegisterCallbacks failed"};
      if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
        return std::string{"cuptiActivityEnable failed"};
      if (m == "activity_api" &&
          (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) != CUPTI_SUCCESS ||
           cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER) != CUPTI_SUCCESS))
        return std::string{"cuptiActivityEnable(RUNTIME/DRIVER) failed"};
      return std::string{};
    }
    if (m == "nsightkit") {
      nsightkit::ReportOptions o;
      o.table.clear();
      o.at_exit = false;
      o.gpu_source = nsightkit::GpuSourceKind::cupti;
      if (!nsightkit::Report::enable(o)) return std::string{"Report::enable failed"};
      std::string const reason = nsightkit::cupti_unavailable_reason();
      if (!reason.empty()) return "CUPTI: " + reason;
      return std::string{};
    }
    return "unknown NSK_CUPTI_MODE '" + m + "' (none, activity, activity_api, nsightkit)";
  }();
  return why;
}

template <bool RangePerLaunch>
void run(benchmark::State& state, long long kernel_ns) {
  if (!setup().empty()) {
    state.SkipWithError(setup().c_str());
    return;
  }
  cudaStream_t s{};
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  int const per_iteration = 1000;
  for (auto _ : state) {
    nsightkit::ScopedRange outer{"loop"};
    for (int i = 0; i < per_iteration; ++i) {
      if constexpr (RangePerLaunch) {
        nsightkit::ScopedRange r{"launch"};
        if (kernel_ns == 0) {
          empty_kernel<<<1, 1, 0, s>>>();
        } else {
          spin<<<1, 1, 0, s>>>(kernel_ns);
        }
      } else if (kernel_ns == 0) {
        empty_kernel<<<1, 1, 0, s>>>();
      } else {
        spin<<<1, 1, 0, s>>>(kernel_ns);
      }
    }
    cudaStreamSynchronize(s);
  }
  state.SetItemsProcessed(state.iterations() * per_iteration);
  state.counters["us_per_launch"] =
      benchmark::Counter(static_cast<double>(state.iterations() * per_iteration),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetLabel(mode());
  cudaStreamDestroy(s);
}

void launch_bound(benchmark::State& state) { run<false>(state, 0); }
void launch_bound_range(benchmark::State& state) { run<true>(state, 0); }
void gpu_bound_5us(benchmark::State& state) { run<false>(state, 5000); }

}  // namespace

BENCHMARK(launch_bound)->Unit(benchmark::kMicrosecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(launch_bound_range)->Unit(benchmark::kMicrosecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(gpu_bound_5us)->Unit(benchmark::kMicrosecond)->UseRealTime()->MinTime(1.0);

BENCHMARK_MAIN();
