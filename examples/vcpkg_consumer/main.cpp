// nsightkit from vcpkg: emits a few ranges and checks, through the in-process Recorder, that they
// reached NVTX (or, built with NSIGHTKIT_DISABLE, that nothing did). Exit code 0 on success.
// Under nsys/ncu the tool owns NVTX, the Recorder cannot attach, and the check is skipped.
#include <nsightkit/nsightkit.hpp>
#include <nsightkit/testing.hpp>

#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

double train(int epochs) {
  NSIGHTKIT_FUNC_RANGE();
  double loss = 1.0;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    NSIGHTKIT_RANGE("epoch {}", epoch);
    nsightkit::ScopedRange forward{nsightkit::Color::rgb(0, 160, 0), "forward"};
    loss *= 0.5;
  }
  return loss;
}

}  // namespace

int main() {
  std::optional<nsightkit::testing::Recorder> recorder;
  try {
    recorder.emplace();
  } catch (std::logic_error const& e) {
    std::printf("vcpkg_consumer: recorder idle (%s)\n", e.what());
  }
  double const loss = train(2);
  if (!recorder) return loss == 0.25 ? 0 : 1;

  std::vector<std::string> const expected =
      nsightkit::enabled
          ? std::vector<std::string>{"push nsightkit train",   "push nsightkit epoch 0",
                                     "push nsightkit forward", "pop nsightkit",
                                     "pop nsightkit",          "push nsightkit epoch 1",
                                     "push nsightkit forward", "pop nsightkit",
                                     "pop nsightkit",          "pop nsightkit"}
          : std::vector<std::string>{};
  std::vector<std::string> const got = recorder->lines();
  for (auto const& line : got) std::printf("  %s\n", line.c_str());
  if (got != expected || loss != 0.25) {
    std::fprintf(stderr, "vcpkg_consumer: expected %zu NVTX events, got %zu\n", expected.size(),
                 got.size());
    return 1;
  }
  std::printf("vcpkg_consumer ok: nsightkit %s, instrumentation %s, %zu NVTX events\n",
              nsightkit::version_string, nsightkit::enabled ? "enabled" : "disabled", got.size());
  return 0;
}
