// A small instrumented "training loop" that the report tests run with NSIGHTKIT_REPORT set: the
// report turns itself on from the environment at startup and writes its outputs at exit, with no
// report call in this file. Busy-waits give the ranges known, stable CPU times (no GPU here).
//
//   NSIGHTKIT_REPORT=table ./report_demo          # the table docs/report.md shows
//   NSIGHTKIT_REPORT=trace=t.json,json=s.json ./report_demo
#include <nsightkit/detail/capture_state.hpp>
#include <nsightkit/report.hpp>

#include <chrono>
#include <string>
#include <thread>

namespace {

void busy(std::chrono::microseconds d) {
  auto const end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

using us = std::chrono::microseconds;

void block(int i) {
  nsightkit::ScopedRange b{"block{}", i};
  {
    nsightkit::ScopedRange a{"attention"};
    busy(us{120 + 40 * i});
  }
  {
    nsightkit::ScopedRange m{"mlp"};
    busy(us{200});
  }
}

}  // namespace

int main() {
  nsightkit::name_current_thread("trainer");
  std::thread loader{[] {
    nsightkit::name_current_thread("loader");
    for (int i = 0; i < 20; ++i) {
      nsightkit::ScopedRange r{"load batch"};
      busy(us{150});
      nsightkit::ScopedRange d{"decode \"jpeg\""};  // a name that needs escaping in JSON
      busy(us{50});
    }
  }};
  nsightkit::Attributes const step_attr{nsightkit::detail::step_category()};
  nsightkit::UniqueRange run{"run"};
  for (int step = 0; step < 20; ++step) {
    nsightkit::ScopedRange s{step_attr, "step " + std::to_string(step)};  // a capture-window step
    {
      nsightkit::ScopedRange f{"forward"};
      {
        nsightkit::ScopedRange e{"embed"};
        busy(us{60});
      }
      for (int i = 0; i < 2; ++i) block(i);
      {
        nsightkit::ScopedRange h{"head"};
        busy(us{80});
      }
    }
    {
      nsightkit::ScopedRange b{"backward"};
      busy(us{700});
    }
    {
      nsightkit::ScopedRange o{"optimizer"};
      busy(us{100});
    }
    if (step % 10 == 0) nsightkit::mark("checkpoint");
  }
  run.end();
  loader.join();
  return 0;
}
