// What CUPTI-based attribution costs per kernel launch, against the floors it stands on. One
// collection mode per process (CUPTI's state cannot be undone within one), chosen by
// NSK_CUPTI_MODE; bench/run_cupti_benchmarks.sh runs every mode, interleaved, and prints ratios:
//
//   none           no CUPTI at all: the launch cost of this machine
//   activity       CUPTI kernel activity records only (the floor of any CUPTI-based tool)
//   activity_api   + runtime and driver API activity records: the floor of the "join API records
//                  afterwards" design (thread and timestamps of every launch call)
//   activity_drv   activity + driver API activity records only, on the report's clock: the floor
//                  of that design as nsightkit would run it (every launch reaches the driver); it
//                  prints whose thread id the records carry and whether their times are the
//                  clock's
//   activity_ts    activity + a timestamp callback (the report's clock), as nsightkit registers
//                  one: what CUPTI's calls of it cost (it prints how many it made per launch)
//   nsightkit      the report with gpu=cupti: kernel/copy/memset/memory activity plus a callback
//                  per launch call noting correlation id -> range (the design nsightkit uses)
//   cb_runtime     activity + an empty callback on the runtime's launch calls (cudaLaunch*)
//   cb_driver      activity + an empty callback on the driver's launch calls (cuLaunch*)
//   cb_both        activity + both: the callback floor under the nsightkit mode
//   paired         the report with gpu=cupti, for the paired_ benchmarks only: blocks of launches
//                  with nsightkit's callbacks off (kernel activity alone) and on, alternating in
//                  one process, so the cost per launch is a difference of neighbouring blocks
// The cb_ modes also print, at exit, how many kernel records carry a correlation id that a
// runtime or a driver callback saw: which domain attribution can rely on; the CUPTI modes but
// nsightkit print on which thread CUPTI completed its buffers (the launching one or its own).
//
// Each benchmark launches kernels in a loop (an empty kernel: launch-bound; a 5 us kernel:
// GPU-bound) inside one range, or with a range around every launch ("_range" benchmarks).
#include <nsightkit/cupti.hpp>
#include <nsightkit/detail/report/clock.hpp>
#include <nsightkit/report.hpp>

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>
#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

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
// The driver API records of activity_drv: how many, and how many name the launching thread by
// its kernel thread id (gettid) or by pthread_self(), and have start/end on the report's clock.
std::uint32_t const main_tid = static_cast<std::uint32_t>(syscall(SYS_gettid));
auto const main_pthread = static_cast<std::uint32_t>(pthread_self());
std::int64_t const started_ns =
    nsightkit::detail::report::clock_now(nsightkit::detail::report::process_tsc());
std::atomic<std::uint64_t> api_records{0}, api_gettid{0}, api_pthread{0}, api_on_clock{0};
std::atomic<std::uint64_t> timestamp_calls{0}, launches{0};

std::uint64_t CUPTIAPI counted_timestamp() {
  timestamp_calls.fetch_add(1, std::memory_order_relaxed);
  std::int64_t const t =
      nsightkit::detail::report::clock_now(nsightkit::detail::report::process_tsc());
  return static_cast<std::uint64_t>(t > 0 ? t : 0);
}

void report_api_records() {
  (void)cuptiActivityFlushAll(1);
  std::fprintf(stderr,
               "driver api records: %llu, %llu with the launching thread's gettid(), %llu with "
               "its pthread_self(), %llu with start and end on the report's clock\n",
               static_cast<unsigned long long>(api_records.load()),
               static_cast<unsigned long long>(api_gettid.load()),
               static_cast<unsigned long long>(api_pthread.load()),
               static_cast<unsigned long long>(api_on_clock.load()));
}

void report_timestamps() {
  (void)cuptiActivityFlushAll(1);
  std::uint64_t const n = launches.load();
  std::fprintf(stderr, "timestamp callbacks: %llu for %llu launches (%.3f per launch)\n",
               static_cast<unsigned long long>(timestamp_calls.load()),
               static_cast<unsigned long long>(n),
               n != 0 ? static_cast<double>(timestamp_calls.load()) / static_cast<double>(n) : 0.0);
}
// Which thread CUPTI hands full buffers to: the launching (benchmark) thread or its own.
std::thread::id const main_thread = std::this_thread::get_id();
std::atomic<std::uint64_t> completions[2]{};  // on the main thread, on another

void note_completion() {
  completions[std::this_thread::get_id() == main_thread ? 0 : 1].fetch_add(1);
}

void report_completions() {
  std::fprintf(stderr, "buffers completed: %llu on the launching thread, %llu on another\n",
               static_cast<unsigned long long>(completions[0].load()),
               static_cast<unsigned long long>(completions[1].load()));
}

void CUPTIAPI raw_request(std::uint8_t** buffer, std::size_t* size, std::size_t* max) {
  *size = std::size_t{8} << 20;
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, *size));
  *max = 0;
}

void CUPTIAPI raw_complete(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t,
                           std::size_t valid) {
  CUpti_Activity* r = nullptr;
  std::uint64_t n = 0;
  std::int64_t const now =
      nsightkit::detail::report::clock_now(nsightkit::detail::report::process_tsc());
  while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
    ++n;
    if (r->kind != CUPTI_ACTIVITY_KIND_DRIVER) continue;
    auto const* a = reinterpret_cast<CUpti_ActivityAPI const*>(r);
    api_records.fetch_add(1, std::memory_order_relaxed);
    if (a->threadId == main_tid) api_gettid.fetch_add(1, std::memory_order_relaxed);
    if (a->threadId == main_pthread) api_pthread.fetch_add(1, std::memory_order_relaxed);
    auto const start = static_cast<std::int64_t>(a->start);
    auto const end = static_cast<std::int64_t>(a->end);
    if (start >= started_ns && start <= end && end <= now)
      api_on_clock.fetch_add(1, std::memory_order_relaxed);
  }
  raw_records.fetch_add(n);
  note_completion();
  std::free(buffer);
}

// Correlation ids seen by the cb_ modes' callbacks, per domain, and those of kernel records.
std::atomic<std::uint64_t> calls[2]{}, kernels_seen{0}, kernels_matched[2]{};
constexpr std::size_t max_ids = std::size_t{1} << 22;
std::atomic<std::uint8_t>* seen_ids = nullptr;  // bit 0: runtime, bit 1: driver

void CUPTIAPI on_launch(void*, CUpti_CallbackDomain domain, CUpti_CallbackId, void const* data) {
  auto const* d = static_cast<CUpti_CallbackData const*>(data);
  if (d->callbackSite != CUPTI_API_ENTER) return;
  int const k = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? 0 : 1;
  calls[k].fetch_add(1, std::memory_order_relaxed);
  if (d->correlationId < max_ids)
    seen_ids[d->correlationId].fetch_or(static_cast<std::uint8_t>(1u << k),
                                        std::memory_order_relaxed);
}

void CUPTIAPI cb_complete(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t,
                          std::size_t valid) {
  note_completion();
  CUpti_Activity* r = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
    if (r->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    std::uint32_t const id = reinterpret_cast<CUpti_ActivityKernel10 const*>(r)->correlationId;
    kernels_seen.fetch_add(1, std::memory_order_relaxed);
    std::uint8_t const bits = id < max_ids ? seen_ids[id].load(std::memory_order_relaxed) : 0;
    for (int k = 0; k < 2; ++k)
      if ((bits & (1u << k)) != 0) kernels_matched[k].fetch_add(1, std::memory_order_relaxed);
  }
  std::free(buffer);
}

void report_correlation() {
  (void)cuptiActivityFlushAll(1);
  std::fprintf(stderr,
               "correlation: %llu runtime launch calls, %llu driver launch calls; %llu kernel "
               "records, %llu with a runtime call's id, %llu with a driver call's id\n",
               static_cast<unsigned long long>(calls[0].load()),
               static_cast<unsigned long long>(calls[1].load()),
               static_cast<unsigned long long>(kernels_seen.load()),
               static_cast<unsigned long long>(kernels_matched[0].load()),
               static_cast<unsigned long long>(kernels_matched[1].load()));
}

/// Subscribes an empty callback to the launch calls of the runtime (cudaLaunch*), the driver
/// (cuLaunch*) or both; "" or why not.
std::string subscribe_launches(bool runtime, bool driver) {
  seen_ids = new std::atomic<std::uint8_t>[max_ids] {};
  if (cuptiActivityRegisterCallbacks(&raw_request, &cb_complete) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
    return "cuptiActivity setup failed";
  CUpti_SubscriberHandle sub{};
  if (cuptiSubscribe(&sub, &on_launch, nullptr) != CUPTI_SUCCESS) return "cuptiSubscribe failed";
  int enabled = 0;
  for (CUpti_CallbackDomain domain : {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_CB_DOMAIN_DRIVER_API}) {
    bool const rt = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
    if (!(rt ? runtime : driver)) continue;
    std::uint32_t const size = rt ? static_cast<std::uint32_t>(CUPTI_RUNTIME_TRACE_CBID_SIZE)
                                  : static_cast<std::uint32_t>(CUPTI_DRIVER_TRACE_CBID_SIZE);
    char const* prefix = rt ? "cudaLaunch" : "cuLaunch";
    for (std::uint32_t cbid = 1; cbid < size; ++cbid) {
      char const* n = nullptr;
      if (cuptiGetCallbackName(domain, cbid, &n) != CUPTI_SUCCESS || n == nullptr) continue;
      if (std::strncmp(n, prefix, std::strlen(prefix)) != 0) continue;
      if (cuptiEnableCallback(1, sub, domain, cbid) == CUPTI_SUCCESS) ++enabled;
    }
  }
  if (enabled == 0) return "no launch callback could be enabled";
  std::atexit(&report_correlation);
  return {};
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
    if (m != "nsightkit" && m != "paired") std::atexit(&report_completions);
    if (m == "activity" || m == "activity_api" || m == "activity_ts" || m == "activity_drv") {
      if (m == "activity_ts" || m == "activity_drv") {
        if (cuptiActivityRegisterTimestampCallback(&counted_timestamp) != CUPTI_SUCCESS)
          return std::string{"cuptiActivityRegisterTimestampCallback failed"};
        std::atexit(&report_timestamps);
      }
      if (cuptiActivityRegisterCallbacks(&raw_request, &raw_complete) != CUPTI_SUCCESS)
        return std::string{"cuptiActivityRegisterCallbacks failed"};
      if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
        return std::string{"cuptiActivityEnable failed"};
      if (m == "activity_api" &&
          (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) != CUPTI_SUCCESS ||
           cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER) != CUPTI_SUCCESS))
        return std::string{"cuptiActivityEnable(RUNTIME/DRIVER) failed"};
      if (m == "activity_drv") {
        if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER) != CUPTI_SUCCESS)
          return std::string{"cuptiActivityEnable(DRIVER) failed"};
        std::atexit(&report_api_records);
      }
      return std::string{};
    }
    if (m == "cb_runtime" || m == "cb_driver" || m == "cb_both") {
      return subscribe_launches(m != "cb_driver", m != "cb_runtime");
    }
    if (m == "nsightkit" || m == "paired") {
      nsightkit::ReportOptions o;
      o.table.clear();
      o.at_exit = false;
      o.gpu_source = nsightkit::GpuSourceKind::cupti;
      if (!nsightkit::Report::enable(o)) return std::string{"Report::enable failed"};
      std::string const reason = nsightkit::cupti_unavailable_reason();
      if (!reason.empty()) return "CUPTI: " + reason;
      return std::string{};
    }
    return "unknown NSK_CUPTI_MODE '" + m +
           "' (none, activity, activity_api, activity_drv, activity_ts, nsightkit, "
           "cb_runtime, cb_driver, cb_both, paired)";
  }();
  return why;
}

template <bool RangePerLaunch>
void run(benchmark::State& state, long long kernel_ns) {
  if (!setup().empty()) {
    state.SkipWithError(setup().c_str());
    return;
  }
  if (mode() == "paired") {
    state.SkipWithError("NSK_CUPTI_MODE=paired runs the paired_ benchmarks only");
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
  launches.fetch_add(static_cast<std::uint64_t>(state.iterations()) * per_iteration);
  state.counters["us_per_launch"] =
      benchmark::Counter(static_cast<double>(state.iterations() * per_iteration),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetLabel(mode());
  cudaStreamDestroy(s);
}

/// The q-quantile of `v` (sorted in place), by linear interpolation.
double quantile(std::vector<double>& v, double q) {
  std::sort(v.begin(), v.end());
  double const pos = q * static_cast<double>(v.size() - 1);
  auto const i = static_cast<std::size_t>(pos);
  double const frac = pos - static_cast<double>(i);
  return i + 1 < v.size() ? v[i] * (1 - frac) + v[i + 1] * frac : v[i];
}

/// Each iteration: one block of empty-kernel launches with kernel activity alone (nsightkit's
/// callbacks off, no ranges) and one with nsightkit on (callbacks, and a range around the
/// block or around every launch), in alternating order. Counters: the medians of the blocks'
/// us per launch, and the median and quartiles of on minus off over neighbouring blocks.
template <bool RangePerLaunch>
void paired(benchmark::State& state) {
  if (!setup().empty() || mode() != "paired") {
    state.SkipWithError(setup().empty() ? "needs NSK_CUPTI_MODE=paired" : setup().c_str());
    return;
  }
  auto& source = nsightkit::detail::report::CuptiSource::instance();
  cudaStream_t s{};
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  int const per_block = 1000;
  auto block = [&](bool on) {
    source.watch_launches(on);
    auto const t0 = std::chrono::steady_clock::now();
    if (on) {
      nsightkit::ScopedRange outer{"loop"};
      for (int i = 0; i < per_block; ++i) {
        if constexpr (RangePerLaunch) {
          nsightkit::ScopedRange r{"launch"};
          empty_kernel<<<1, 1, 0, s>>>();
        } else {
          empty_kernel<<<1, 1, 0, s>>>();
        }
      }
    } else {
      for (int i = 0; i < per_block; ++i) empty_kernel<<<1, 1, 0, s>>>();
    }
    cudaStreamSynchronize(s);
    auto const t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::micro>(t1 - t0).count() / per_block;
  };
  std::vector<double> off, on, diff;
  std::int64_t n = 0;
  for (auto _ : state) {
    bool const on_first = (n++ % 2) == 1;
    double const first = block(on_first);
    double const second = block(!on_first);
    double const a = on_first ? second : first;
    double const b = on_first ? first : second;
    state.SetIterationTime((a + b) * per_block * 1e-6);
    if (n <= 4) continue;  // warm-up pairs
    off.push_back(a);
    on.push_back(b);
    diff.push_back(b - a);
  }
  source.watch_launches(true);
  cudaStreamDestroy(s);
  launches.fetch_add(static_cast<std::uint64_t>(state.iterations()) * 2 * per_block);
  if (diff.empty()) return;
  state.counters["pairs"] = static_cast<double>(diff.size());
  state.counters["off_us"] = quantile(off, 0.5);
  state.counters["on_us"] = quantile(on, 0.5);
  state.counters["diff_us"] = quantile(diff, 0.5);
  state.counters["diff_q1"] = quantile(diff, 0.25);
  state.counters["diff_q3"] = quantile(diff, 0.75);
  state.SetLabel(mode());
}

void launch_bound(benchmark::State& state) { run<false>(state, 0); }
void launch_bound_range(benchmark::State& state) { run<true>(state, 0); }
void gpu_bound_5us(benchmark::State& state) { run<false>(state, 5000); }

}  // namespace

BENCHMARK(launch_bound)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(launch_bound_range)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(gpu_bound_5us)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_TEMPLATE(paired, false)
    ->Name("paired_launch")
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime()
    ->Iterations(300);
BENCHMARK_TEMPLATE(paired, true)
    ->Name("paired_launch_range")
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime()
    ->Iterations(300);

BENCHMARK_MAIN();
