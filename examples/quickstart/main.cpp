// nsightkit quickstart: instrument a toy training loop, then print what reached NVTX.
//
//   ./quickstart                 # prints the recorded NVTX events
//   nsys profile -t nvtx ./quickstart      # the same ranges in Nsight Systems' timeline
//   ncu --nvtx --nvtx-include "nsightkit@step 2/" ./quickstart   # (kernels of a CUDA program)
#include <nsightkit/nsightkit.hpp>
#include <nsightkit/testing.hpp>

#include <chrono>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <thread>

namespace nsk = nsightkit;

namespace {

struct Stage {
  static constexpr char const* name{"pipeline"};  // a domain of our own
};

float forward(int layers) {
  NSIGHTKIT_FUNC_RANGE();  // named "forward", registered once
  float x = 1.0f;
  for (int i = 0; i < layers; ++i) {
    nsk::ScopedRange layer{"layer{}", i};  // formatted only because something listens
    x = x * 0.5f + 1.0f;
  }
  return x;
}

void backward() {
  nsk::ScopedRange r{nsk::Color::rgb(220, 60, 60), "backward"};
  std::this_thread::sleep_for(std::chrono::microseconds(50));
}

void load_batch(int step) {
  nsk::ScopedRangeIn<Stage> r{{nsk::Category{1, "io"}, nsk::Payload{step * 256}}, "load batch"};
}

}  // namespace

int main() {
  std::optional<nsk::testing::Recorder> recorder;
  try {
    recorder.emplace();
  } catch (std::logic_error const& e) {
    std::printf("[quickstart] in-process recorder idle: %s\n", e.what());
  }

  nsk::name_current_thread("main");
  float loss = 0.0f;
  for (int step = 0; step < 3; ++step) {
    NSIGHTKIT_RANGE("step {}", step);
    load_batch(step);
    loss += forward(2);
    backward();
  }
  nsk::mark("done, loss {:.3f}", loss);

  std::printf("nsightkit %s quickstart: 3 steps, instrumentation %s\n", nsk::version_string,
              nsk::enabled ? "enabled" : "disabled (NSIGHTKIT_DISABLE)");
  if (!recorder) return 0;
  auto const events = recorder->range_events();
  std::printf("%zu NVTX range events recorded in-process (%zu still open):\n", events.size(),
              recorder->open_ranges());
  int level = 0;  // nesting across all domains, for display
  for (auto const& e : events) {
    if (e.kind == nsk::testing::EventKind::pop && level > 0) --level;
    std::printf("  %*s%s\n", 2 * level, "", e.describe().c_str());
    if (e.kind == nsk::testing::EventKind::push) ++level;
  }
  return recorder->open_ranges() == 0 ? 0 : 1;
}
