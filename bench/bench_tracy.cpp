// Tracy's zone beside nsightkit's range (issue 37). One source, two programs (bench/CMakeLists.txt,
// only when NSIGHTKIT_TRACY_DIR names a Tracy source tree):
//   bench_tracy_zone        Tracy's client (TRACY_ENABLE, no server attached), no nsightkit
//   bench_tracy_nsightkit   nsightkit; the report is on when NSIGHTKIT_REPORT is set at start-up,
//                           which also makes it the NVTX tool of this executable (docs/nvtx-tool.md)
// bench/run_tracy_benchmarks.sh runs one case per process, pinned with taskset.
//
// usage: PROGRAM CASE THREADS [ROUNDS [RANGES]]
// Each of THREADS threads records RANGES ranges (default 2,000,000) per round, ROUNDS rounds
// (default 7), the threads starting each round together. A thread's time is its own CPU time
// (CLOCK_THREAD_CPUTIME_ID), so threads sharing one core are not charged for each other; the row
// is the best round's mean over threads. One line on stdout:
//   CASE <tab> THREADS <tab> ns per range (CPU, best round) <tab> ns per range (wall, best round)
//   <tab> ns per range (CPU, median round)
// Depth 3 nests three ranges per iteration and divides by the ranges recorded (3 per iteration).
//
// Where a recorded range's time goes (bench_tracy_nsightkit only): the *_direct cases enable the
// report from the program after NVTX initialised without a tool, so a ScopedRange reaches the
// report only directly (no NVTX call, no NVTX tool); *_noclock cases also give the report a clock
// that reads nothing (ReportOptions::clock). NSK_BENCH_TABLE names the file their table goes to.
#if defined(NSK_BENCH_TRACY)
#include <tracy/Tracy.hpp>
#else
#include <nsightkit/module.hpp>
#include <nsightkit/range.hpp>
#include <nsightkit/report.hpp>

#include <nvtx3/nvtx3.hpp>
#endif

#include <time.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define NSK_BENCH_HAVE_RDTSC 1
#endif

namespace {

std::uint64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

std::uint64_t wall_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

class Barrier {
 public:
  explicit Barrier(unsigned n) : n_(n) {}
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    unsigned const gen = generation_;
    if (++waiting_ == n_) {
      waiting_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return generation_ != gen; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  unsigned n_;
  unsigned waiting_ = 0;
  unsigned generation_ = 0;
};

volatile std::uint64_t g_sink = 0;

// One case: how many ranges one call of `body` records, and the body.
using Body = void (*)(std::uint64_t&);
struct Case {
  char const* name;
  unsigned depth;
  Body body;
  int report = 0;  // 1: enabled by the program, NVTX without a tool; 2: and a clock reading nothing
};

#if defined(NSK_BENCH_HAVE_RDTSC)
void rdtsc_body(std::uint64_t& s) { s += __rdtsc(); }
#endif
void steady_body(std::uint64_t& s) {
  s += static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

#if defined(NSK_BENCH_TRACY)
void tracy_d1(std::uint64_t& s) {
  ZoneScopedN("zone");
  ++s;
}
void tracy_d3(std::uint64_t& s) {
  ZoneScopedN("outer");
  {
    ZoneScopedN("middle");
    {
      ZoneScopedN("inner");
      ++s;
    }
  }
}
#else
void range_d1(std::uint64_t& s) {
  nsightkit::ScopedRange const r{"range"};
  ++s;
}
void range_d3(std::uint64_t& s) {
  nsightkit::ScopedRange const a{"outer"};
  nsightkit::ScopedRange const b{"middle"};
  nsightkit::ScopedRange const c{"inner"};
  ++s;
}
void module_d1(std::uint64_t& s) {
  nsightkit::ModuleScope const m{"module"};
  ++s;
}
void module_d3(std::uint64_t& s) {
  nsightkit::ModuleScope const a{"outer"};
  nsightkit::ModuleScope const b{"middle"};
  nsightkit::ModuleScope const c{"inner"};
  ++s;
}
void nvtx_c_d1(std::uint64_t& s) {
  nvtxRangePushA("nvtx");
  ++s;
  nvtxRangePop();
}
void nvtx_c_d3(std::uint64_t& s) {
  nvtxRangePushA("outer");
  nvtxRangePushA("middle");
  nvtxRangePushA("inner");
  ++s;
  nvtxRangePop();
  nvtxRangePop();
  nvtxRangePop();
}
void nvtx3_d1(std::uint64_t& s) {
  nvtx3::scoped_range const r{"nvtx3"};
  ++s;
}
void nvtx3_d3(std::uint64_t& s) {
  nvtx3::scoped_range const a{"outer"};
  nvtx3::scoped_range const b{"middle"};
  nvtx3::scoped_range const c{"inner"};
  ++s;
}
#endif

constexpr Case kCases[] = {
#if defined(NSK_BENCH_HAVE_RDTSC)
    {"rdtsc", 1, rdtsc_body},
#endif
    {"steady_clock", 1, steady_body},
#if defined(NSK_BENCH_TRACY)
    {"tracy_zone_d1", 1, tracy_d1},
    {"tracy_zone_d3", 3, tracy_d3},
#else
    {"scoped_range_d1", 1, range_d1},
    {"scoped_range_d3", 3, range_d3},
    {"module_scope_d1", 1, module_d1},
    {"module_scope_d3", 3, module_d3},
    {"nvtx_push_pop_d1", 1, nvtx_c_d1},
    {"nvtx_push_pop_d3", 3, nvtx_c_d3},
    {"nvtx3_scoped_d1", 1, nvtx3_d1},
    {"nvtx3_scoped_d3", 3, nvtx3_d3},
    {"scoped_range_direct_d1", 1, range_d1, 1},
    {"scoped_range_direct_d3", 3, range_d3, 1},
    {"scoped_range_noclock_d1", 1, range_d1, 2},
    {"scoped_range_noclock_d3", 3, range_d3, 2},
#endif
};

struct Sample {
  double cpu = 0;
  double wall = 0;
};

// The loop is out of line and takes the body as a template argument so that the call inlines.
template <Body body>
void record(std::uint64_t iterations, std::uint64_t& s) {
  for (std::uint64_t i = 0; i < iterations; ++i) body(s);
}

using Loop = void (*)(std::uint64_t, std::uint64_t&);
template <std::size_t I>
constexpr Loop loop_of() {
  return record<kCases[I].body>;
}

template <std::size_t... I>
constexpr Loop loop_at(std::size_t i, std::index_sequence<I...>) {
  Loop loops[] = {loop_of<I>()...};
  return loops[i];
}

int usage(char const* argv0) {
  std::fprintf(stderr, "usage: %s CASE THREADS [ROUNDS [RANGES]]\ncases:", argv0);
  for (auto const& c : kCases) std::fprintf(stderr, " %s", c.name);
  std::fprintf(stderr, "\n");
  return 2;
}

#if !defined(NSK_BENCH_TRACY)
std::int64_t no_clock() noexcept { return 0; }

void enable_report_directly(bool clock) {
  nvtxMarkA("nsightkit bench: NVTX initialised without a tool");
  nsightkit::ReportOptions o;
  char const* table = std::getenv("NSK_BENCH_TABLE");
  o.table = table != nullptr ? table : "";
  o.gpu = false;
  if (!clock) o.clock = &no_clock;
  if (!nsightkit::Report::enable(o)) std::fprintf(stderr, "nsightkit bench: the report is off\n");
}
#endif

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage(argv[0]);
  std::size_t which = sizeof(kCases) / sizeof(kCases[0]);
  for (std::size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); ++i) {
    if (std::strcmp(kCases[i].name, argv[1]) == 0) which = i;
  }
  if (which == sizeof(kCases) / sizeof(kCases[0])) return usage(argv[0]);
  auto const threads = static_cast<unsigned>(std::strtoul(argv[2], nullptr, 10));
  unsigned const rounds = argc > 3 ? static_cast<unsigned>(std::strtoul(argv[3], nullptr, 10)) : 7u;
  std::uint64_t const ranges = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 2000000u;
  if (threads == 0 || rounds == 0 || ranges == 0) return usage(argv[0]);

  Case const& c = kCases[which];
#if !defined(NSK_BENCH_TRACY)
  if (c.report != 0) enable_report_directly(c.report == 1);
#endif
  Loop const loop = loop_at(which, std::make_index_sequence<sizeof(kCases) / sizeof(kCases[0])>{});
  std::uint64_t const iterations = (ranges + c.depth - 1) / c.depth;
  double const recorded = static_cast<double>(iterations * c.depth);

  std::vector<std::vector<Sample>> samples(threads, std::vector<Sample>(rounds));
  Barrier barrier(threads);
  auto work = [&](unsigned t) {
    std::uint64_t s = 0;
    for (unsigned r = 0; r < rounds; ++r) {
      barrier.wait();
      std::uint64_t const c0 = thread_cpu_ns();
      std::uint64_t const w0 = wall_ns();
      loop(iterations, s);
      std::uint64_t const w1 = wall_ns();
      std::uint64_t const c1 = thread_cpu_ns();
      samples[t][r] = {static_cast<double>(c1 - c0) / recorded,
                       static_cast<double>(w1 - w0) / recorded};
    }
    g_sink = g_sink + s;
  };
  if (threads == 1) {
    work(0);  // on the main thread, as a single-threaded program records
  } else {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(work, t);
    for (auto& th : pool) th.join();
  }

  std::vector<Sample> per_round(rounds);
  for (unsigned r = 0; r < rounds; ++r) {
    for (unsigned t = 0; t < threads; ++t) {
      per_round[r].cpu += samples[t][r].cpu / threads;
      per_round[r].wall += samples[t][r].wall / threads;
    }
  }
  auto by_cpu = per_round;
  std::sort(by_cpu.begin(), by_cpu.end(),
            [](Sample const& a, Sample const& b) { return a.cpu < b.cpu; });
  std::printf("%s\t%u\t%.2f\t%.2f\t%.2f\n", c.name, threads, by_cpu.front().cpu,
              by_cpu.front().wall, by_cpu[rounds / 2].cpu);
  return 0;
}
