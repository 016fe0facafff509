// A long run in little time (tests/report/run_memory.py): N ranges, a start/end range with a new
// name and a counter sample every K of them, the resident memory printed at each eighth of the
// run. The report comes from NSIGHTKIT_REPORT; its memory must stay flat once warmed up, and its
// outputs must hold every range, start/end range and counter sample.
//
//   report_memory_demo N K [PACE_NS]      (PACE_NS: each iteration lasts at least that long)
#include <nsightkit/detail/counter.hpp>
#include <nsightkit/range.hpp>
#include <nsightkit/report.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <unistd.h>

namespace {

long resident_kib() {
  long pages = 0, resident = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * (::sysconf(_SC_PAGESIZE) / 1024);
}

}  // namespace

int main(int argc, char** argv) {
  long long const n = argc > 1 ? std::atoll(argv[1]) : 1000000;
  long long const every = argc > 2 ? std::atoll(argv[2]) : 100;
  std::chrono::nanoseconds const pace{argc > 3 ? std::atoll(argv[3]) : 0};
  if (n <= 0 || every <= 0) return 2;
  for (long long i = 0; i < n; ++i) {
    nsightkit::ScopedRange r{"iteration"};
    if (pace.count() > 0) {
      auto const until = std::chrono::steady_clock::now() + pace;
      while (std::chrono::steady_clock::now() < until) {
      }
    }
    if (i % every == 0) {
      nsightkit::UniqueRange request{"request {}", i};
      nsightkit::detail::counter("queue depth", static_cast<double>(i % 7));
    }
    if ((i + 1) % (n / 8 > 0 ? n / 8 : 1) == 0) {
      std::printf("rss_kib %lld %ld\n", i + 1, resident_kib());
      std::fflush(stdout);
    }
  }
  return 0;
}
