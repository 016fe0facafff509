// Conan test_package for nsightkit. Usage: test_package enabled|disabled (the mode the recipe's
// `disable` option selected). Checks that the option and the compiled mode (NSIGHTKIT_COMPILED: the
// package links libnsightkit) reached the compiler and, through the Recorder, exactly which NVTX
// events the ranges emitted. Exit code 0 on success.
#include <nsightkit/nsightkit.hpp>
#include <nsightkit/testing.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

int checksum(int n) {
  NSIGHTKIT_FUNC_RANGE();
  int sum = 0;
  for (int i = 1; i <= n; ++i) {
    nsightkit::ScopedRange item{"item {}", i};  // formatted by libnsightkit
    sum += i;
  }
  nsightkit::mark("done");
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 ||
      (std::strcmp(argv[1], "enabled") != 0 && std::strcmp(argv[1], "disabled") != 0)) {
    std::fprintf(stderr, "usage: test_package enabled|disabled\n");
    return 2;
  }
#if !defined(NSIGHTKIT_COMPILED)
#error "test_package: the package did not give its consumers the compiled mode (NSIGHTKIT_COMPILED)"
#endif
  char const* const mode = "compiled";
  bool const want_enabled = std::strcmp(argv[1], "enabled") == 0;
  if (nsightkit::enabled != want_enabled) {
    std::fprintf(stderr,
                 "test_package: the package option asked for instrumentation %s, but the "
                 "code was compiled with it %s (NSIGHTKIT_DISABLE %s)\n",
                 argv[1], nsightkit::enabled ? "enabled" : "disabled",
                 nsightkit::enabled ? "missing" : "present");
    return 1;
  }

  nsightkit::testing::Recorder rec;
  int const sum = checksum(2);
  std::vector<std::string> const expected =
      want_enabled ? std::vector<std::string>{"push nsightkit checksum",
                                              "push nsightkit item 1",
                                              "pop nsightkit",
                                              "push nsightkit item 2",
                                              "pop nsightkit",
                                              "mark nsightkit done",
                                              "pop nsightkit"}
                   : std::vector<std::string>{};
  if (sum != 3 || rec.lines() != expected) {
    std::fprintf(stderr, "test_package: sum %d, %zu NVTX events, expected 3 and %zu:\n", sum,
                 rec.lines().size(), expected.size());
    for (auto const& l : rec.lines()) std::fprintf(stderr, "  %s\n", l.c_str());
    return 1;
  }
  std::printf(
      "test_package ok: nsightkit %s, instrumentation %s, %zu NVTX events recorded, "
      "CUDA helpers %s, %s\n",
      nsightkit::version_string, want_enabled ? "enabled" : "disabled", expected.size(),
      nsightkit::has_cuda ? "on" : "off", mode);
  return 0;
}
