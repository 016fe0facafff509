// The HTML page's and the trace's end-to-end program (tests/report_html/CMakeLists.txt).
//
//   html_demo            a small model: known paths and call counts, 40 capture-window steps,
//                        a counter track, ranges with payloads; outputs from NSIGHTKIT_REPORT
//   html_demo paths N    N distinct paths (a tree 3 levels deep), for the page at scale
//   html_demo ranges N   N ranges (one path each step repeats), for the trace's size cap
//   html_demo stream N F N ranges over about N/50 ms, printing F's size halfway (the trace
//                        streamed while the run goes on)
#include <nsightkit/detail/report/engine.hpp>  // the engine's pieces, in either mode
#include <nsightkit/nsightkit.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

void spin_ns(long ns) {
  auto const until = std::chrono::steady_clock::now() + std::chrono::nanoseconds{ns};
  while (std::chrono::steady_clock::now() < until) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  nsightkit::name_current_thread("trainer");
  nsightkit::Attributes const step_attr{nsightkit::detail::step_category()};
  if (argc == 3 && std::strcmp(argv[1], "paths") == 0) {
    long const n = std::atol(argv[2]);
    long made = 0;
    for (int a = 0; made < n; ++a) {
      nsightkit::ScopedRange ra{"model/part" + std::to_string(a)};
      ++made;
      for (int b = 0; b < 50 && made < n; ++b) {
        nsightkit::ScopedRange rb{"layer" + std::to_string(b)};
        ++made;
        for (int c = 0; c < 40 && made < n; ++c, ++made) {
          nsightkit::ScopedRange rc{"op" + std::to_string(c)};
        }
      }
    }
    return 0;
  }
  if (argc == 4 && std::strcmp(argv[1], "stream") == 0) {
    // N ranges in bursts of 1000 with a pause of 20 ms after each; halfway, a longer pause and the size
    // the trace file (argv[3]) has then, before any write.
    long const n = std::atol(argv[2]);
    for (long i = 0; i < n; i += 1000) {
      for (long j = i; j < i + 1000 && j < n; ++j) {
        nsightkit::ScopedRange r{nsightkit::Attributes{nsightkit::Payload{std::int64_t{j}}},
                                 "layer"};
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(i + 1000 == n / 2 ? 500 : 20));
      if (i + 1000 == n / 2) {
        std::FILE* f = std::fopen(argv[3], "rb");
        long size = -1;
        if (f != nullptr && std::fseek(f, 0, SEEK_END) == 0) size = std::ftell(f);
        if (f != nullptr) std::fclose(f);
        std::printf("mid-run trace bytes: %ld\n", size);
      }
    }
    return 0;
  }
  if (argc == 3 && std::strcmp(argv[1], "ranges") == 0) {
    long const n = std::atol(argv[2]);
    for (long i = 0; i < n; i += 2) {
      nsightkit::ScopedRange s{step_attr, "step"};
      nsightkit::ScopedRange f{"forward"};
      nsightkit::ScopedRange l{"layer"};
    }
    return 0;
  }
  for (int step = 0; step < 40; ++step) {
    nsightkit::ScopedRange s{step_attr, "step " + std::to_string(step)};
    {
      nsightkit::ScopedRange f{nsightkit::Attributes{nsightkit::Payload{std::int64_t{step}}},
                               "forward"};
      {
        nsightkit::ScopedRange e{"encoder"};
        spin_ns(step % 10 == 9 ? 400'000 : 100'000);  // every tenth step is slow
      }
      {
        nsightkit::ScopedRange d{"decoder <b>&\"quoted\"</b>"};
        spin_ns(50'000);
      }
    }
    {
      nsightkit::ScopedRange b{"backward"};
      spin_ns(150'000);
    }
#if NSIGHTKIT_ENABLED
    nsightkit::detail::report::counter_sample("queue depth", static_cast<double>(step % 4));
#endif
  }
  return 0;
}
