// An unmodified program annotated only with NVTX (the C API and nvtx3's C++ API, the default and a
// named domain, a registered string, a start/end range ended on another thread, a named thread, a
// mark), for `nsightkit profile`. Exits with the status given as its argument.
#include <nvtx3/nvtx3.hpp>

#include <cstdlib>
#include <thread>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace {

struct Solver {
  static constexpr char const* name{"Solver"};
};

}  // namespace

int main(int argc, char** argv) {
#if defined(__linux__)
  nvtxNameOsThreadA(static_cast<std::uint32_t>(::syscall(SYS_gettid)), "main loop");
#endif
  nvtx3::registered_string_in<Solver> const factor{"factor"};
  nvtxRangeId_t const whole = nvtxRangeStartA("whole run");
  for (int i = 0; i < 6; ++i) {
    nvtx3::scoped_range step{"train_step"};
    {
      nvtx3::scoped_range fwd{"forward"};
      nvtx3::scoped_range_in<Solver> f{factor};
    }
    nvtxRangePushA("backward");
    nvtxRangePop();
    nvtxMarkA("step done");
  }
  std::thread ender{[whole] { nvtxRangeEnd(whole); }};
  ender.join();
  return argc > 1 ? std::atoi(argv[1]) : 0;
}
