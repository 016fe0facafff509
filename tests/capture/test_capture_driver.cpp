// CaptureWindow's default profiler backend (the CUDA driver, loaded at run time) against a fake
// driver (tests/fake_driver: libcuda.so.1 that logs every call) and without any driver.
//
// capture.cmake runs this executable several times, each with its own environment and tag:
//   [fake]        the fake driver on LD_LIBRARY_PATH, with a device
//   [no_device]   the fake driver, whose cuInit says CUDA_ERROR_NO_DEVICE (NSK_FAKE_CUDA=no_device)
//   [init_fails]  the fake driver, whose cuInit fails otherwise (NSK_FAKE_CUDA=init=999)
//   [no_driver]   no driver at all (exit 77, "skipped", where a real driver is installed)
// The driver is loaded once per process, so one run holds one of these worlds.
// Passes in NSIGHTKIT_DISABLE builds too: windows then call nothing; the backend, called
// directly, still works.
#define CATCH_CONFIG_RUNNER
#include "support.hpp"

#include <nsightkit/capture.hpp>
#include <nsightkit/detail/cuda_driver.hpp>

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace nsk = nsightkit;
namespace driver = nsightkit::detail::cuda_driver;
using nsightkit::testing::Recorder;
using nsk::CaptureEvent;
using nsk::CaptureOptions;
using nsk::CaptureSchedule;
using nsk::CaptureWindow;
using Lines = std::vector<std::string>;

namespace {

constexpr bool on = nsk::enabled;

Lines when_on(Lines l) { return on ? l : Lines{}; }

Lines concat(std::initializer_list<Lines> parts) {
  Lines all;
  for (auto const& p : parts) all.insert(all.end(), p.begin(), p.end());
  return all;
}

/// What the backend calls to make a context current on a thread that has none.
Lines const make_context{"cuCtxGetCurrent", "cuDeviceGet", "cuDevicePrimaryCtxRetain",
                         "cuCtxSetCurrent"};

/// The fake driver's control functions, found in the libcuda.so.1 nsightkit loaded.
class FakeDriver {
 public:
  /// The fake as loaded by nsightkit's loader (which it loads now if no window did yet).
  static FakeDriver& get() {
    static FakeDriver fake;
    return fake;
  }

  void reset() const { reset_(); }
  void fail(char const* call, int status) const { fail_(call, status); }
  void note(std::string const& text) const { note_(text.c_str()); }
  bool profiler_running() const { return running_() != 0; }
  int primary_retains() const { return retains_(); }
  void make_context_current() const { make_current_(); }
  bool has_current_context() const { return has_current_() != 0; }

  /// Every call since the last reset, in order (and the notes).
  Lines log() const {
    std::string text(log_(nullptr, 0) + 1, '\0');
    log_(text.data(), text.size());
    text.resize(std::strlen(text.c_str()));
    Lines lines;
    std::size_t pos = 0;
    while (pos < text.size()) {
      std::size_t const nl = text.find('\n', pos);
      lines.push_back(text.substr(pos, nl - pos));
      pos = nl + 1;
    }
    return lines;
  }

  /// The log without the error-text look-ups (cuGetErrorName / cuGetErrorString).
  Lines calls() const {
    Lines out;
    for (auto& l : log()) {
      if (l != "cuGetErrorName" && l != "cuGetErrorString") out.push_back(l);
    }
    return out;
  }

 private:
  FakeDriver() {
    (void)driver::api();  // loads the library the way nsightkit does
    lib_ = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    INFO(
        "no libcuda.so.1 was loaded: run with LD_LIBRARY_PATH pointing at the fake driver's "
        "directory (ctest does)");
    REQUIRE(lib_ != nullptr);
    find(reset_, "nsk_fake_cuda_reset");
    find(fail_, "nsk_fake_cuda_fail");
    find(note_, "nsk_fake_cuda_note");
    find(log_, "nsk_fake_cuda_log");
    find(running_, "nsk_fake_cuda_profiler_running");
    find(retains_, "nsk_fake_cuda_primary_retains");
    find(make_current_, "nsk_fake_cuda_make_context_current");
    find(has_current_, "nsk_fake_cuda_has_current_context");
  }

  template <class F>
  void find(F& f, char const* name) {
    void* p = ::dlsym(lib_, name);
    INFO(
        "the libcuda.so.1 loaded is not nsightkit's fake driver: run with LD_LIBRARY_PATH "
        "pointing at the fake (ctest does)");
    REQUIRE(p != nullptr);
    f = reinterpret_cast<F>(p);
  }

  void* lib_{nullptr};
  void (*reset_)(){};
  void (*fail_)(char const*, int){};
  void (*note_)(char const*){};
  std::size_t (*log_)(char*, std::size_t){};
  int (*running_)(){};
  int (*retains_)(){};
  void (*make_current_)(){};
  int (*has_current_)(){};
};

/// A fresh fake driver: empty log, no failures, no profiler, no context on this thread.
FakeDriver& fresh_fake() {
  FakeDriver& f = FakeDriver::get();
  f.reset();
  return f;
}

/// Options with the default (driver) backend, diagnostics collected, environment ignored.
CaptureOptions driver_options(Lines& diagnostics) {
  CaptureOptions o;
  o.environment_variable = nullptr;
  o.diagnostics = [&diagnostics](std::string const& m) { diagnostics.push_back(m); };
  return o;
}

/// Runs `n` steps, noting "step i" in the driver's log before each begins and "end i" before it
/// ends; records in `running` whether the profiler ran during each step.
void run_noted_steps(CaptureWindow& w, FakeDriver const& fake, int n, std::string* running) {
  for (int i = 0; i < n; ++i) {
    fake.note("step " + std::to_string(i));
    auto s = w.step();
    if (running != nullptr) *running += fake.profiler_running() ? 'P' : '-';
    fake.note("end " + std::to_string(i));
    s.end();
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// [fake]: a driver with a device

TEST_CASE("the fake driver is the one nsightkit loaded", "[fake]") {
  FakeDriver& fake = fresh_fake();
  CHECK(driver::api().unavailable == nullptr);
  CHECK(driver::api().profiler_start != nullptr);
  CHECK(fake.log().empty());
}

// The thread has no current context: the primary one is made current, as the CUDA runtime does.
TEST_CASE("start before the first active step, sync then stop after the last, nothing outside",
          "[fake]") {
  FakeDriver& fake = fresh_fake();
  Recorder rec;
  Lines diagnostics;
  std::string running;
  {
    CaptureWindow w{CaptureSchedule{1, 1, 2}, driver_options(diagnostics)};
    run_noted_steps(w, fake, 6, &running);
    fake.note("window destroyed");
  }
  // W U A A D D
  CHECK(fake.log() == concat({{"step 0", "end 0", "step 1", "end 1", "step 2"},
                              when_on(concat({make_context, {"cuProfilerStart"}})),
                              {"end 2", "step 3", "end 3"},
                              when_on({"cuCtxGetCurrent", "cuCtxSynchronize", "cuCtxGetCurrent",
                                       "cuProfilerStop"}),
                              {"step 4", "end 4", "step 5", "end 5", "window destroyed"}}));
  CHECK(running == (on ? "--PP--" : "------"));
  CHECK_FALSE(fake.profiler_running());
  CHECK(fake.primary_retains() == (on ? 1 : 0));
  CHECK(fake.has_current_context() == on);  // made current, as the CUDA runtime would
  CHECK(diagnostics.empty());
  CHECK(rec.lines() ==
        nsk_test::expect({"push nsightkit step 0", "pop nsightkit", "push nsightkit step 1",
                          "pop nsightkit", "start nsightkit capture", "push nsightkit step 2",
                          "pop nsightkit", "push nsightkit step 3", "pop nsightkit",
                          "end nsightkit", "push nsightkit step 4", "pop nsightkit",
                          "push nsightkit step 5", "pop nsightkit"}));
}

TEST_CASE("a thread with a current context (a program that used CUDA) keeps it", "[fake]") {
  FakeDriver& fake = fresh_fake();
  fake.make_context_current();
  Lines diagnostics;
  {
    CaptureWindow w{CaptureSchedule{0, 0, 1, 2}, driver_options(diagnostics)};
    run_noted_steps(w, fake, 3, nullptr);
  }
  Lines const window = {"cuCtxGetCurrent", "cuProfilerStart"};
  Lines const end = {"cuCtxGetCurrent", "cuCtxSynchronize", "cuCtxGetCurrent", "cuProfilerStop"};
  CHECK(fake.log() == concat({{"step 0"},
                              when_on(window),
                              {"end 0"},
                              when_on(end),
                              {"step 1"},
                              when_on(window),
                              {"end 1"},
                              when_on(end),
                              {"step 2", "end 2"}}));
  CHECK(fake.primary_retains() == 0);
  CHECK(diagnostics.empty());
}

TEST_CASE("synchronize_before_stop = false: no cuCtxSynchronize", "[fake]") {
  FakeDriver& fake = fresh_fake();
  fake.make_context_current();
  Lines diagnostics;
  CaptureOptions o = driver_options(diagnostics);
  o.synchronize_before_stop = false;
  {
    CaptureWindow w{CaptureSchedule{0, 0, 1}, o};
    run_noted_steps(w, fake, 1, nullptr);
  }
  CHECK(fake.log() == concat({{"step 0"},
                              when_on({"cuCtxGetCurrent", "cuProfilerStart"}),
                              {"end 0"},
                              when_on({"cuCtxGetCurrent", "cuProfilerStop"})}));
  CHECK(diagnostics.empty());
}

TEST_CASE("the NVTX backend alone synchronizes through the driver, never starts the profiler",
          "[fake]") {
  FakeDriver& fake = fresh_fake();
  fake.make_context_current();
  Lines diagnostics;
  CaptureOptions o = driver_options(diagnostics);
  o.backends = nsk::CaptureBackend::nvtx_range;
  {
    CaptureWindow w{CaptureSchedule{0, 0, 1}, o};
    run_noted_steps(w, fake, 1, nullptr);
  }
  CHECK(fake.log() ==
        concat({{"step 0", "end 0"}, when_on({"cuCtxGetCurrent", "cuCtxSynchronize"})}));
  CHECK(diagnostics.empty());
}

TEST_CASE("two overlapping windows share the profiler: one start, one stop", "[fake]") {
  FakeDriver& fake = fresh_fake();
  fake.make_context_current();
  Lines diagnostics;
  {
    CaptureWindow outer{CaptureSchedule{0, 0, 3}, driver_options(diagnostics)};
    CaptureWindow inner{CaptureSchedule{1, 0, 1}, driver_options(diagnostics)};
    for (int i = 0; i < 3; ++i) {
      fake.note("outer " + std::to_string(i));
      auto o = outer.step();
      if (i < 2) {
        fake.note("inner " + std::to_string(i));
        auto s = inner.step();
        fake.note("inner end " + std::to_string(i));
      }
      CHECK(fake.profiler_running() == on);  // also after the inner window stopped
      fake.note("outer end " + std::to_string(i));
    }
  }
  Lines const sync = {"cuCtxGetCurrent", "cuCtxSynchronize"};
  CHECK(fake.log() ==
        concat({{"outer 0"},
                when_on({"cuCtxGetCurrent", "cuProfilerStart"}),
                {"inner 0", "inner end 0", "outer end 0", "outer 1", "inner 1", "inner end 1"},
                when_on(sync),  // the inner window ends: synchronized, but the profiler runs on
                {"outer end 1", "outer 2", "outer end 2"},
                when_on(concat({sync, {"cuCtxGetCurrent", "cuProfilerStop"}}))}));
  CHECK_FALSE(fake.profiler_running());
  CHECK(diagnostics.empty());
}

TEST_CASE("cuda_profiler_backend() called directly: reference-counted, even when disabled",
          "[fake]") {
  FakeDriver& fake = fresh_fake();
  auto& cuda = nsk::cuda_profiler_backend();
  CHECK(cuda.start() == "");
  CHECK(fake.profiler_running());
  CHECK(cuda.start() == "");
  CHECK(cuda.synchronize() == "");
  CHECK(cuda.stop() == "");
  CHECK(fake.profiler_running());  // one start is still unmatched
  CHECK(cuda.stop() == "");
  CHECK_FALSE(fake.profiler_running());
  CHECK(cuda.stop() == "cuProfilerStop() skipped: no cuProfilerStart() to match");
  CHECK(fake.calls() == concat({make_context,
                                {"cuProfilerStart", "cuCtxGetCurrent", "cuCtxSynchronize",
                                 "cuCtxGetCurrent", "cuProfilerStop"}}));
}

TEST_CASE("close() from another thread stops the profiler there (that thread gets a context)",
          "[fake]") {
  FakeDriver& fake = fresh_fake();
  fake.make_context_current();
  Lines diagnostics;
  CaptureWindow w{CaptureSchedule{0, 0, 5}, driver_options(diagnostics)};
  {
    auto s = w.step();
    CHECK(w.capturing() == on);
  }
  fake.note("close");
  std::thread closer{[&] { w.close(); }};
  closer.join();
  CHECK(fake.log() ==
        concat({when_on({"cuCtxGetCurrent", "cuProfilerStart"}),
                {"close"},
                when_on(concat(
                    {make_context, {"cuCtxSynchronize", "cuCtxGetCurrent", "cuProfilerStop"}}))}));
  CHECK_FALSE(fake.profiler_running());
  CHECK(diagnostics.empty());
}

namespace {
struct FailCase {
  char const* call;     ///< the fake call that fails
  int status;           ///< with this status
  char const* message;  ///< the window's one diagnostic
  Lines calls;          ///< the driver calls of a {0, 0, 1, 2} window over 2 steps
  bool running_after;   ///< the profiler still runs after the window
};
}  // namespace

TEST_CASE("a failing driver call: one message naming the call and error, then no more calls",
          "[fake]") {
  Lines const start = {"cuCtxGetCurrent", "cuProfilerStart"};
  Lines const stop = {"cuCtxGetCurrent", "cuCtxSynchronize", "cuCtxGetCurrent", "cuProfilerStop"};
  std::vector<FailCase> const cases{
      {"cuProfilerStart", 999,
       "CaptureWindow: cuProfilerStart() returned CUDA_ERROR_UNKNOWN (999): unknown error; "
       "capture continues without the profiler backend",
       start,  // never again: no sync or stop for this window, no start for the next one
       false},
      {"cuCtxSynchronize", 700,
       "CaptureWindow: cuCtxSynchronize() returned CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal "
       "memory access was encountered; capture continues without the profiler backend",
       concat({start, stop}),  // the profiler is still stopped after a failed synchronize
       false},
      {"cuProfilerStop", 999,
       "CaptureWindow: cuProfilerStop() returned CUDA_ERROR_UNKNOWN (999): unknown error; capture "
       "continues without the profiler backend",
       concat({start, stop}), true},
      {"cuCtxGetCurrent",
       201,
       "CaptureWindow: cuCtxGetCurrent() returned CUDA_ERROR_INVALID_CONTEXT (201): invalid "
       "device context; capture continues without the profiler backend",
       {"cuCtxGetCurrent"},
       false},
  };
  for (auto const& c : cases) {
    INFO(c.call);
    FakeDriver& fake = fresh_fake();
    fake.make_context_current();
    fake.fail(c.call, c.status);
    Recorder rec;
    Lines diagnostics;
    int starts = 0;
    int stops = 0;
    {
      CaptureWindow w{CaptureSchedule{0, 0, 1, 2}, driver_options(diagnostics)};
      w.on_start([&](CaptureEvent const&) { ++starts; });
      w.on_stop([&](CaptureEvent const&) { ++stops; });
      for (int i = 0; i < 2; ++i) {
        auto s = w.step();
        CHECK(w.capturing() == on);  // the window is open, with or without the profiler
      }
    }
    CHECK(diagnostics == when_on({c.message}));
    CHECK(fake.calls() == when_on(c.calls));
    Lines const log = fake.log();
    if (on) {
      // The error's name and text come from the driver, right after the failing call.
      auto const failed = std::find(log.begin(), log.end(), c.call);
      REQUIRE(failed != log.end());
      CHECK(Lines(failed + 1, failed + 3) == Lines{"cuGetErrorName", "cuGetErrorString"});
    }
    CHECK(fake.profiler_running() == (on && c.running_after));
    CHECK(starts == (on ? 2 : 0));  // both windows still open and close
    CHECK(stops == (on ? 2 : 0));
    std::size_t window_ranges = 0;
    for (auto const& l : rec.lines()) window_ranges += l == "start nsightkit capture" ? 1u : 0u;
    CHECK(window_ranges == (on ? 2u : 0u));
  }
}

TEST_CASE("a failing context call names it: cuDevicePrimaryCtxRetain out of memory", "[fake]") {
  FakeDriver& fake = fresh_fake();  // no current context: the backend must make one
  fake.fail("cuDevicePrimaryCtxRetain", 2);
  CHECK(nsk::cuda_profiler_backend().start() ==
        "cuDevicePrimaryCtxRetain() returned CUDA_ERROR_OUT_OF_MEMORY (2): out of memory");
  CHECK_FALSE(fake.profiler_running());
  CHECK(nsk::cuda_profiler_backend().stop() ==
        "cuProfilerStop() skipped: no cuProfilerStart() to match");
}

TEST_CASE("a driver shutting down (CUDA_ERROR_DEINITIALIZED) at stop is accepted silently",
          "[fake]") {
  FakeDriver& fake = fresh_fake();
  fake.make_context_current();
  Lines diagnostics;
  {
    CaptureWindow w{CaptureSchedule{0, 0, 1}, driver_options(diagnostics)};
    auto s = w.step();
    fake.fail("cuCtxSynchronize", 4);
    fake.fail("cuProfilerStop", 4);
  }
  CHECK(diagnostics.empty());
  CHECK(fake.calls() == when_on({"cuCtxGetCurrent", "cuProfilerStart", "cuCtxGetCurrent",
                                 "cuCtxSynchronize", "cuCtxGetCurrent", "cuProfilerStop"}));
}

TEST_CASE("exit() inside a window synchronizes and stops the profiler through the driver",
          "[fake]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::fflush(nullptr);
  pid_t const pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    FakeDriver& fake = fresh_fake();
    fake.make_context_current();
    auto* w = new CaptureWindow{CaptureSchedule{0, 0, 5}};  // leaked, as in a program that exits
    // on_stop runs after the profiler stopped: the log is complete then.
    w->on_stop([fd = fds[1], &fake](CaptureEvent const& e) {
      std::string all;
      for (auto const& l : fake.calls()) all += l + "\n";
      all += e.complete ? "complete\n" : "closed early\n";
      if (::write(fd, all.data(), all.size()) < 0) std::_Exit(3);
    });
    for (int i = 0; i < 2; ++i) auto s = w->step();
    fake.note("exit");
    std::exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[256];
  ssize_t n = 0;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(out == (on ? "cuCtxGetCurrent\ncuProfilerStart\nexit\ncuCtxGetCurrent\ncuCtxSynchronize\n"
                     "cuCtxGetCurrent\ncuProfilerStop\nclosed early\n"
                   : ""));
}

// ---------------------------------------------------------------------------------------------
// [no_device] / [init_fails]: a driver whose cuInit fails

namespace {
/// Runs a two-cycle window and a second window with the default backend; checks that each says
/// `line` once, that capture goes on without the profiler, and that the driver was asked
/// nothing but cuInit, plus `per_message` each time a message describes why it is unusable.
void check_unusable_driver(std::string const& reason, Lines const& per_message) {
  std::string const line = "CaptureWindow: no CUDA driver/device (" + reason +
                           "): capture continues without the profiler";
  Lines diagnostics;
  int starts = 0;
  int stops = 0;
  {
    CaptureWindow w{CaptureSchedule{1, 0, 2, 2}, driver_options(diagnostics)};
    w.on_start([&](CaptureEvent const&) { ++starts; });
    w.on_stop([&](CaptureEvent const&) { ++stops; });
    for (int i = 0; i < 8; ++i) {
      auto s = w.step();
      CHECK(w.capturing() == (on && s.captured()));
    }
  }
  CHECK(starts == (on ? 2 : 0));
  CHECK(stops == (on ? 2 : 0));
  CHECK(diagnostics == when_on({line}));  // once for the window, not once per cycle
  {
    CaptureWindow again{CaptureSchedule{0, 0, 1}, driver_options(diagnostics)};
    auto s = again.step();
  }
  CHECK(diagnostics == when_on({line, line}));  // each window says it once
  // Called directly, the backend says the same and touches nothing.
  auto& cuda = nsk::cuda_profiler_backend();
  std::string const direct = "no CUDA driver/device (" + reason + ")";
  CHECK(cuda.start() == direct);
  CHECK(cuda.synchronize() == direct);
  CHECK(cuda.stop() == "cuProfilerStop() skipped: no cuProfilerStart() to match");
  Lines expected{"cuInit"};
  for (int i = 0; i < (on ? 4 : 2); ++i) expected = concat({expected, per_message});
  CHECK(FakeDriver::get().log() == expected);
}
}  // namespace

TEST_CASE("no device: one line naming the reason, capture continues without the profiler",
          "[no_device]") {
  // Only cuInit reached the driver: nothing is asked of a driver without a device.
  check_unusable_driver("no CUDA device is present", {});
}

TEST_CASE("cuInit failing otherwise: the line names cuInit's error", "[init_fails]") {
  check_unusable_driver(
      "the CUDA driver could not be initialised; cuInit() returned CUDA_ERROR_UNKNOWN (999): "
      "unknown error",
      {"cuGetErrorName", "cuGetErrorString"});
}

// ---------------------------------------------------------------------------------------------
// [no_driver]: no libcuda.so.1 at all

TEST_CASE("no driver: one line naming the missing library, capture goes on", "[no_driver]") {
  std::string const reason = "the NVIDIA driver library libcuda.so.1 could not be loaded";
  std::string const line = "CaptureWindow: no CUDA driver/device (" + reason +
                           "): capture continues without the profiler";
  Recorder rec;
  Lines diagnostics;
  int stops = 0;
  {
    CaptureWindow w{CaptureSchedule{1, 0, 2, 2}, driver_options(diagnostics)};
    w.on_stop([&](CaptureEvent const&) { ++stops; });
    for (int i = 0; i < 8; ++i) {
      auto s = w.step();
      CHECK(w.capturing() == (on && s.captured()));
    }
  }
  CHECK(stops == (on ? 2 : 0));
  CHECK(diagnostics == when_on({line}));
  REQUIRE(driver::api().unavailable != nullptr);
  CHECK(std::string{driver::api().unavailable} == reason);
  std::size_t window_ranges = 0;
  for (auto const& l : rec.lines()) window_ranges += l == "start nsightkit capture" ? 1u : 0u;
  CHECK(window_ranges == (on ? 2u : 0u));  // the NVTX window range does not need a driver
  auto& cuda = nsk::cuda_profiler_backend();
  CHECK(cuda.start() == "no CUDA driver/device (" + reason + ")");
  CHECK(cuda.synchronize() == "no CUDA driver/device (" + reason + ")");
}

TEST_CASE("no driver, default diagnostics: the line goes to stderr as \"nsightkit: ...\"",
          "[no_driver]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::fflush(nullptr);
  pid_t const pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    ::dup2(fds[1], 2);
    {
      CaptureWindow w{CaptureSchedule{0, 0, 1, 2}};
      for (int i = 0; i < 2; ++i) auto s = w.step();
    }
    std::fflush(stderr);
    std::_Exit(0);
  }
  ::close(fds[1]);
  std::string err;
  char buf[256];
  ssize_t n = 0;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) err.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(err == (on ? "nsightkit: CaptureWindow: no CUDA driver/device (the NVIDIA driver library "
                     "libcuda.so.1 could not be loaded): capture continues without the profiler\n"
                   : ""));
}

int main(int argc, char* argv[]) {
  // [no_driver] needs a machine without a driver: where one is installed, say so and skip.
  if (char const* want = std::getenv("NSK_TEST_NO_DRIVER"); want != nullptr && *want == '1') {
    if (void* real = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
      ::dlclose(real);
      std::printf(
          "SKIPPED: a CUDA driver (libcuda.so.1) is installed; this run needs a machine "
          "without one\n");
      return 77;
    }
  }
  return Catch::Session().run(argc, argv);
}
