/**
 * @file capture.hpp
 * @brief CaptureWindow: profile exactly the steps that matter (a schedule like
 *        `torch.profiler.schedule`, the CUDA profiler API, an NVTX window range, callbacks).
 *
 * @code
 * nsightkit::CaptureWindow window{nsightkit::CaptureSchedule{5, 2, 3}};  // wait, warmup, active
 * for (int i = 0; i < 20; ++i) {
 *   auto step = window.step();   // NVTX range "step i"; steps 7, 8, 9 are captured
 *   train_step(i);
 * }                              // cuProfilerStart before step 7, cuProfilerStop after step 9
 * @endcode
 *
 * **Steps** are numbered from 0 in the order step() is called. With `skip_first = s`,
 * `wait = w`, `warmup = u`, `active = a`, steps `0 .. s-1` are skipped, then each cycle of
 * `w + u + a` steps has `w` waiting steps, `u` warm-up steps and `a` active (captured) steps;
 * `repeat` cycles run (0 = forever), every later step is `done`. Example: `{5, 2, 3}` gives
 * steps 0-4 wait, 5-6 warmup, 7-9 active, 10- done. Unlike torch's default (`repeat = 0`),
 * CaptureSchedule's default is `repeat = 1`: one window, which is what a profiler run wants.
 *
 * **Backends** (CaptureBackend, combinable; callbacks are always available):
 * - `cuda_profiler`: the CUDA profiler API, `cuProfilerStart()` when the first active step of a
 *   window begins, `cuProfilerStop()` when its last active step ends, the context synchronized
 *   first (`cuCtxSynchronize`, unless CaptureOptions::synchronize_before_stop is false) so the
 *   window's last kernels finish inside the capture. These are the CUDA driver's counterparts of
 *   cudaProfilerStart / cudaDeviceSynchronize / cudaProfilerStop; the driver is loaded at run
 *   time, so the program links no CUDA library for them (see cuda_profiler_backend()). Pairs
 *   with `nsys profile --capture-range=cudaProfilerApi` and `ncu --profile-from-start off`.
 *   Overlapping windows share the profiler: it stops when the last of them ends.
 * - `nvtx_range`: a start/end range (default name "capture", a registered string, domain
 *   "nsightkit") spanning each window, for `nsys profile --capture-range=nvtx -p capture@nsightkit`
 *   (nsys writes `range@domain`; ncu writes `domain@range`: `ncu --nvtx --nvtx-include
 * nsightkit@capture`). nsys matches registered strings only unless
 * NSYS_NVTX_PROFILER_REGISTER_ONLY=0; the window range is registered, the formatted "step N" ranges
 * are not.
 * - callbacks: on_start / on_stop with the window's step numbers (CaptureEvent).
 *
 * Each step is an NVTX push/pop range "step N" in the "nsightkit" domain with the category
 * `detail::step_category()` (in-process consumers such as the report see it too).
 * Order at a window start: profiler start, NVTX window range, on_start, then the step's range.
 * At a window end: the step's range ends, device sync, NVTX window range ends, profiler stop,
 * on_stop.
 *
 * **Environment.** `NSIGHTKIT_CAPTURE` (read once, when the window is constructed) replaces the
 * code's schedule as a whole: `NSIGHTKIT_CAPTURE="wait=10,warmup=2,active=3,repeat=1"`
 * (keys: wait, warmup, active, repeat, skip_first; `active` required; other keys default as in
 * CaptureSchedule), or `off` / `none` / `0` to switch capture off. Unset or empty: the code's
 * schedule. A malformed or contradictory value (negative, non-numeric, overflowing, unknown or
 * repeated key, active=0, missing active) prints ONE message naming the variable and the bad part
 * and switches capture off for that window (or, with CaptureOptions::strict_environment, throws
 * std::invalid_argument from the constructor). It never silently captures another window.
 *
 * **Errors.** A schedule written in code that is invalid throws std::invalid_argument from the
 * constructor. Where there is no CUDA driver or no device, a window using the default profiler
 * says so once ("no CUDA driver/device (<why>): capture continues without the profiler") when its
 * first window opens. Any other failing profiler call prints one message naming the driver call
 * and the error (e.g. "cuProfilerStart() returned CUDA_ERROR_UNKNOWN (999): unknown error");
 * capture goes on without that backend (NVTX range, callbacks, capture state), never a crash.
 *
 * **Ends.** The window's destructor and close() end an open capture. The first capture that
 * opens installs a std::atexit handler that ends captures still open when the program calls
 * exit() or returns from main (also windows that leaked, or live on a stack that never unwinds).
 * Not covered: std::abort, std::quick_exit, _Exit, fatal signals (the tools see the process end).
 *
 * **Threads.** A window's steps come from one thread: the thread of its first step. step() from
 * another thread, or while the previous step is still open, throws std::logic_error. Different
 * windows may run on different threads. close(), capturing() and the destructor may be called
 * from any thread; register callbacks before the first step.
 *
 * **NSIGHTKIT_DISABLE.** Everything compiles unchanged. The window still numbers steps and
 * computes their phases from the code's schedule (step.phase(), phase_of(), the misuse checks
 * stay), but it reads no environment, calls no backend, emits no NVTX, runs no callback and
 * does not touch the capture state.
 */
#pragma once

#include <nsightkit/attributes.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/detail/capture/registry.hpp>
#include <nsightkit/detail/capture/schedule_parse.hpp>
#include <nsightkit/detail/capture_state.hpp>
#include <nsightkit/detail/cuda_driver.hpp>
#include <nsightkit/range.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

/// What a step is in its window's schedule.
enum class CapturePhase : std::uint8_t {
  skip,    ///< one of the first `skip_first` steps
  wait,    ///< a waiting step of a cycle (not captured)
  warmup,  ///< a warm-up step of a cycle (not captured)
  active,  ///< a captured step
  done,    ///< after the last cycle (`repeat` cycles ran)
  off,     ///< capture is switched off (NSIGHTKIT_CAPTURE=off, a bad value, or close())
};

/// The lowercase name of a phase: "skip", "wait", "warmup", "active", "done", "off".
constexpr char const* to_string(CapturePhase p) noexcept {
  switch (p) {
    case CapturePhase::skip: return "skip";
    case CapturePhase::wait: return "wait";
    case CapturePhase::warmup: return "warmup";
    case CapturePhase::active: return "active";
    case CapturePhase::done: return "done";
    case CapturePhase::off: return "off";
  }
  return "?";
}

/**
 * @brief Which steps are captured: `wait`, `warmup`, `active`, `repeat`, `skip_first`.
 *
 * An aggregate in torch.profiler.schedule's order, so `CaptureSchedule{5, 2, 3}` is wait=5,
 * warmup=2, active=3 (repeat=1, skip_first=0). Steps count from 0.
 *
 * @code
 * constexpr nsightkit::CaptureSchedule s{5, 2, 3};
 * static_assert(s.phase_of(7) == nsightkit::CapturePhase::active);
 * nsightkit::CaptureSchedule every_100{97, 2, 1, 0};  // steps 99, 199, 299, ... forever
 * @endcode
 */
struct CaptureSchedule {
  std::int64_t wait{0};        ///< steps per cycle before the warm-up (not captured)
  std::int64_t warmup{0};      ///< steps per cycle before the active steps (not captured)
  std::int64_t active{1};      ///< captured steps per cycle, at least 1
  std::int64_t repeat{1};      ///< number of cycles; 0 = forever
  std::int64_t skip_first{0};  ///< steps skipped once, before the first cycle

  /// Steps in one cycle (wait + warmup + active). Meaningful for a valid schedule.
  [[nodiscard]] constexpr std::int64_t cycle_length() const noexcept {
    return wait + warmup + active;
  }

  /// The phase of step `step` (steps before 0 are `skip`). Meaningful for a valid schedule.
  [[nodiscard]] constexpr CapturePhase phase_of(std::int64_t step) const noexcept {
    if (step < skip_first) return CapturePhase::skip;
    std::int64_t const s = step - skip_first;
    std::int64_t const cycle = cycle_length();
    if (cycle <= 0) return CapturePhase::done;
    if (repeat > 0 && s / cycle >= repeat) return CapturePhase::done;
    std::int64_t const pos = s % cycle;
    if (pos < wait) return CapturePhase::wait;
    if (pos < wait + warmup) return CapturePhase::warmup;
    return CapturePhase::active;
  }

  /// True when `step` is the first active step of a cycle (a capture starts before it).
  [[nodiscard]] constexpr bool starts_window(std::int64_t step) const noexcept {
    return phase_of(step) == CapturePhase::active &&
           (step - skip_first) % cycle_length() == wait + warmup;
  }

  /// True when `step` is the last active step of a cycle (the capture stops after it).
  [[nodiscard]] constexpr bool ends_window(std::int64_t step) const noexcept {
    return phase_of(step) == CapturePhase::active &&
           (step - skip_first) % cycle_length() == cycle_length() - 1;
  }

  /// The cycle `step` belongs to (0 for the first), or -1 for a skipped step.
  [[nodiscard]] constexpr std::int64_t cycle_of(std::int64_t step) const noexcept {
    if (step < skip_first || cycle_length() <= 0) return -1;
    return (step - skip_first) / cycle_length();
  }

  /// "" when the schedule is valid, else what is wrong with it (one sentence).
  [[nodiscard]] std::string validation_error() const {
    struct Field {
      char const* name;
      std::int64_t value;
    };
    for (Field const f : {Field{"wait", wait}, Field{"warmup", warmup}, Field{"active", active},
                          Field{"repeat", repeat}, Field{"skip_first", skip_first}}) {
      if (f.value < 0) {
        return std::string{f.name} + " must not be negative (got " + std::to_string(f.value) + ")";
      }
    }
    if (active < 1) return "active must be at least 1 (got 0): such a window captures nothing";
    constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max();
    if (wait > max - warmup || wait + warmup > max - active) {
      return "wait + warmup + active overflows a 64-bit step count";
    }
    return {};
  }

  /**
   * @brief Parses "wait=10,warmup=2,active=3,repeat=1[,skip_first=N]" (NSIGHTKIT_CAPTURE's
   *        grammar, without the "off" words).
   * @param text the schedule; blanks around keys and values are ignored.
   * @param error when not null, receives what is wrong (naming the bad part) on failure.
   * @return the schedule, or std::nullopt when `text` is malformed or contradictory.
   */
  [[nodiscard]] static std::optional<CaptureSchedule> parse(std::string_view text,
                                                            std::string* error = nullptr) {
    detail::capture::ParsedSchedule p;
    std::string err = detail::capture::parse_schedule_text(text, p);
    CaptureSchedule s{p.wait, p.warmup, p.active, p.repeat, p.skip_first};
    if (err.empty()) err = s.validation_error();
    if (!err.empty()) {
      if (error != nullptr) *error = std::move(err);
      return std::nullopt;
    }
    return s;
  }

  /// Schedules compare field by field.
  friend constexpr bool operator==(CaptureSchedule const& a, CaptureSchedule const& b) noexcept {
    return a.wait == b.wait && a.warmup == b.warmup && a.active == b.active &&
           a.repeat == b.repeat && a.skip_first == b.skip_first;
  }
  /// Schedules compare field by field.
  friend constexpr bool operator!=(CaptureSchedule const& a, CaptureSchedule const& b) noexcept {
    return !(a == b);
  }
};

/// The backends a window drives at its edges; combine with `|`.
enum class CaptureBackend : unsigned {
  none = 0u,           ///< neither (callbacks and the capture state still work)
  cuda_profiler = 1u,  ///< cuProfilerStart / cuProfilerStop (through a ProfilerBackend)
  nvtx_range = 2u,     ///< an NVTX start/end range spanning each window
  all = 3u,            ///< both
};

/// The union of two backend sets.
constexpr CaptureBackend operator|(CaptureBackend a, CaptureBackend b) noexcept {
  return static_cast<CaptureBackend>(static_cast<unsigned>(a) | static_cast<unsigned>(b));
}
/// The intersection of two backend sets.
constexpr CaptureBackend operator&(CaptureBackend a, CaptureBackend b) noexcept {
  return static_cast<CaptureBackend>(static_cast<unsigned>(a) & static_cast<unsigned>(b));
}
/// True when `set` contains every backend of `b`.
constexpr bool has_backend(CaptureBackend set, CaptureBackend b) noexcept {
  return (set & b) == b && b != CaptureBackend::none;
}

/**
 * @brief What a window calls to start, synchronize and stop a profiler. The default is the CUDA
 *        driver's profiler API (cuda_profiler_backend()); inject your own to test or to drive
 *        another tool.
 *
 * Each call returns "" on success, else one sentence saying what failed (it becomes the
 * window's diagnostic). Calls are made under a process-wide lock: a backend must not call back
 * into a CaptureWindow. A window calls synchronize() then stop() at each window end, and never
 * calls stop() without a successful start().
 *
 * @code
 * struct Log : nsightkit::ProfilerBackend {
 *   std::vector<std::string> calls;
 *   std::string start() override { calls.push_back("start"); return {}; }
 *   std::string synchronize() override { calls.push_back("sync"); return {}; }
 *   std::string stop() override { calls.push_back("stop"); return {}; }
 * };
 * @endcode
 */
class ProfilerBackend {
 public:
  /// Starts collection ("" on success, else what failed).
  virtual std::string start() = 0;
  /// Waits until the device finished the work queued so far ("" on success).
  virtual std::string synchronize() = 0;
  /// Stops collection ("" on success, else what failed).
  virtual std::string stop() = 0;
  /// Backends are destroyed by their owner, through the derived type or this base.
  virtual ~ProfilerBackend() = default;

 protected:
  /// Only derived backends are constructed.
  ProfilerBackend() = default;
  /// Derived backends may be copied.
  ProfilerBackend(ProfilerBackend const&) = default;
  /// Derived backends may be assigned.
  ProfilerBackend& operator=(ProfilerBackend const&) = default;
};

namespace detail {

/// "no CUDA driver/device (the NVIDIA driver library libcuda.so.1 could not be loaded)".
inline std::string describe_no_cuda_driver() {
  std::string m = "no CUDA driver/device (";
  cuda_driver::describe_unavailable(m);
  m += ')';
  return m;
}

/// "cuProfilerStart() returned CUDA_ERROR_UNKNOWN (999): unknown error".
inline std::string describe_driver_failure(char const* call, int status) {
  std::string m = call;
  m += " returned ";
  cuda_driver::describe(m, status);
  return m;
}

/// The CUDA profiler API through the driver (cuProfilerStart / cuCtxSynchronize /
/// cuProfilerStop), loaded at run time: the program links no CUDA library for it. Shared by the
/// whole process (reference-counted starts, as the profiler state is per process).
class CudaDriverProfiler final : public ProfilerBackend {
 public:
  std::string start() override {
    std::lock_guard<std::mutex> lock{capture::registry.profiler_mutex};
    if (capture::registry.profiler_starts > 0) {
      ++capture::registry.profiler_starts;  // already running for another window
      return {};
    }
    cuda_driver::Api const& a = cuda_driver::api();
    if (a.unavailable != nullptr) return describe_no_cuda_driver();
    if (a.profiler_start == nullptr) return "the CUDA driver has no cuProfilerStart()";
    // cudaProfilerStart would initialise the thread's context first; so does this.
    char const* call = "";
    int st = cuda_driver::ensure_context(call);
    if (st != cuda_driver::success) return describe_driver_failure(call, st);
    st = a.profiler_start();
    if (st != cuda_driver::success) return describe_driver_failure("cuProfilerStart()", st);
    capture::registry.profiler_starts = 1;
    return {};
  }

  std::string synchronize() override {
    cuda_driver::Api const& a = cuda_driver::api();
    if (a.unavailable != nullptr) return describe_no_cuda_driver();
    if (a.ctx_synchronize == nullptr) return "the CUDA driver has no cuCtxSynchronize()";
    char const* call = "";
    int st = cuda_driver::ensure_context(call);
    if (st == cuda_driver::success) {
      call = "cuCtxSynchronize()";
      st = a.ctx_synchronize();
    }
    if (st == cuda_driver::success || st == cuda_driver::deinitialized) return {};  // shutting down
    return describe_driver_failure(call, st);
  }

  std::string stop() override {
    std::lock_guard<std::mutex> lock{capture::registry.profiler_mutex};
    if (capture::registry.profiler_starts <= 0) {
      return "cuProfilerStop() skipped: no cuProfilerStart() to match";
    }
    if (--capture::registry.profiler_starts > 0) return {};  // another window still captures
    cuda_driver::Api const& a = cuda_driver::api();          // usable: a start succeeded
    if (a.profiler_stop == nullptr) return "the CUDA driver has no cuProfilerStop()";
    char const* call = "";
    int st = cuda_driver::ensure_context(call);
    if (st == cuda_driver::success) {
      call = "cuProfilerStop()";
      st = a.profiler_stop();
    }
    if (st == cuda_driver::success || st == cuda_driver::deinitialized) return {};
    return describe_driver_failure(call, st);
  }
};

/// The one CUDA profiler backend (leaked on purpose: usable during static destruction).
inline ProfilerBackend& cuda_driver_profiler() {
  static ProfilerBackend* const backend = new CudaDriverProfiler{};
  return *backend;
}

}  // namespace detail

/**
 * @brief The CUDA profiler backend every window uses by default: `cuProfilerStart`,
 *        `cuCtxSynchronize`, `cuProfilerStop` of the CUDA driver, loaded at run time.
 *
 * The driver API's counterparts of `cudaProfilerStart` / `cudaDeviceSynchronize` /
 * `cudaProfilerStop`, acting on the same context (the runtime's primary context), so
 * `nsys --capture-range=cudaProfilerApi` and `ncu --profile-from-start off` honour them; but the
 * program links no CUDA library for them, whatever compiles it. A thread without a current context
 * gets the primary context of device 0 made current first, as the CUDA runtime does on its first
 * call. Without a driver or a device every call returns "no CUDA driver/device (<why>)" and touches
 * nothing.
 *
 * Process-wide and reference-counted: the profiler starts with the first unmatched start() and
 * stops with the stop() that matches the last one. Available in every build, with or without
 * the CUDA headers (NSIGHTKIT_HAS_CUDA); calling it directly works the same under
 * NSIGHTKIT_DISABLE (only windows are silenced).
 *
 * @code
 * auto& cuda = nsightkit::cuda_profiler_backend();
 * if (std::string err = cuda.start(); !err.empty()) std::fprintf(stderr, "%s\n", err.c_str());
 * @endcode
 */
inline ProfilerBackend& cuda_profiler_backend() { return detail::cuda_driver_profiler(); }

/// The step numbers of a window, given to on_start / on_stop callbacks.
struct CaptureEvent {
  std::int64_t first_step{0};  ///< the window's first active step
  /// on_start: the last step the schedule will capture in this window; on_stop: the last step
  /// begun inside the window (smaller when the window was closed early).
  std::int64_t last_step{0};
  std::int64_t cycle{0};  ///< which window: 0 for the first cycle, 1 for the next, ...
  bool complete{false};   ///< on_stop: the window ran to its scheduled end; on_start: false
};

/// A window's start or stop callback.
using CaptureCallback = std::function<void(CaptureEvent const&)>;

/**
 * @brief How a CaptureWindow captures: backends, synchronization, names, environment, errors.
 *
 * @code
 * nsightkit::CaptureOptions o;
 * o.backends = nsightkit::CaptureBackend::nvtx_range;   // nsys --capture-range=nvtx only
 * o.synchronize_before_stop = false;
 * o.diagnostics = [](std::string const& m) { my_log(m); };
 * nsightkit::CaptureWindow window{{10, 2, 3}, o};
 * @endcode
 */
struct CaptureOptions {
  /// Backends driven at window edges. `cuda_profiler` drives `profiler` (default: the CUDA
  /// driver's profiler API, cuda_profiler_backend()).
  CaptureBackend backends{CaptureBackend::all};
  /// Synchronize the device (ProfilerBackend::synchronize; by default cuCtxSynchronize) before
  /// a window ends, so its last kernels finish inside the capture. Applies to every backend.
  bool synchronize_before_stop{true};
  /// Name of the NVTX window range (domain "nsightkit"). Registered with the tool, so
  /// `nsys -p NAME@nsightkit` matches it without NSYS_NVTX_PROFILER_REGISTER_ONLY=0.
  /// Must outlive the window (a string literal).
  char const* nvtx_range_name{"capture"};
  /// Variable that overrides the schedule; nullptr or "" to ignore the environment.
  char const* environment_variable{"NSIGHTKIT_CAPTURE"};
  /// Throw std::invalid_argument from the constructor on a bad environment value, instead of
  /// printing one message and switching capture off.
  bool strict_environment{false};
  /// The profiler to drive; nullptr = cuda_profiler_backend() (the CUDA driver, loaded at run
  /// time; without a driver or a device the window says so once and goes on without it).
  /// Not owned: it must outlive the window.
  ProfilerBackend* profiler{nullptr};
  /// Receives each diagnostic (one sentence, no prefix, no newline); empty = print
  /// "nsightkit: <message>" on stderr. Must not throw or call back into a window.
  std::function<void(std::string const&)> diagnostics{};
};

class CaptureWindow;

/**
 * @brief One step of a CaptureWindow: an NVTX range "step N" from construction to destruction
 *        (or end()); a window edge before it begins or after it ends.
 *
 * Made only by CaptureWindow::step(); not copyable or movable (it ends on its own thread).
 *
 * @code
 * for (int i = 0; i < n; ++i) {
 *   auto step = window.step();
 *   if (step.captured()) std::printf("step %lld is captured\n", static_cast<long
 * long>(step.number())); train_step(i);
 * }
 * @endcode
 */
class CaptureStep {
 public:
  CaptureStep(CaptureStep const&) = delete;
  CaptureStep(CaptureStep&&) = delete;
  CaptureStep& operator=(CaptureStep const&) = delete;
  CaptureStep& operator=(CaptureStep&&) = delete;

  /// Ends the step (see end()).
  ~CaptureStep() noexcept { end(); }

  /// Ends the step now: its range ends, and if it was the last active step of a window the
  /// capture stops. Later calls and the destructor do nothing.
  void end() noexcept;

  /// The step's number (0 for the window's first step).
  [[nodiscard]] std::int64_t number() const noexcept { return number_; }
  /// The step's phase in the window's schedule (`off` once the window was closed).
  [[nodiscard]] CapturePhase phase() const noexcept { return phase_; }
  /// True when the step is captured (its phase is `active`).
  [[nodiscard]] bool captured() const noexcept { return phase_ == CapturePhase::active; }

 private:
  friend class CaptureWindow;
  explicit CaptureStep(CaptureWindow& window);

  CaptureWindow* window_;
  std::int64_t number_{-1};
  CapturePhase phase_{CapturePhase::off};
  bool open_{false};
#if NSIGHTKIT_ENABLED
  detail::Emitted range_{};
#endif
};

/**
 * @brief A capture window: counts steps, knows the phase of each, and starts/stops the
 *        profiler, an NVTX window range and callbacks at the edges of the active steps.
 *
 * Not copyable or movable. See the file documentation for the schedule, the environment
 * variable, errors, ends, threads and NSIGHTKIT_DISABLE.
 *
 * @code
 * namespace nsk = nsightkit;
 * nsk::CaptureWindow window{nsk::CaptureSchedule{10, 2, 3}};   // NSIGHTKIT_CAPTURE may override
 * window.on_stop([](nsk::CaptureEvent const& e) {
 *   std::printf("captured steps %lld-%lld\n", static_cast<long long>(e.first_step),
 *               static_cast<long long>(e.last_step));
 * });
 * for (int i = 0; i < steps; ++i) {
 *   auto step = window.step();
 *   train_step(i);
 * }
 * // nsys profile -t cuda,nvtx --capture-range=cudaProfilerApi --capture-range-end=stop ./train
 * @endcode
 */
class CaptureWindow {
 public:
  /**
   * @brief A window with a schedule written in code (NSIGHTKIT_CAPTURE may replace it).
   * @param schedule which steps to capture.
   * @param options backends, synchronization, environment variable, diagnostics.
   * @throws std::invalid_argument when `schedule` is invalid (negative field, active = 0,
   *         overflowing cycle), or when options.strict_environment is set and the environment
   *         value is malformed. The message names the problem.
   */
  explicit CaptureWindow(CaptureSchedule schedule, CaptureOptions options = {})
      : CaptureWindow(Tag{}, schedule, true, std::move(options)) {}

  /**
   * @brief A window whose schedule comes only from the environment (NSIGHTKIT_CAPTURE, or
   *        options.environment_variable); capture is off while the variable is unset.
   * @throws std::invalid_argument with options.strict_environment and a malformed value.
   * @code
   * auto window = nsightkit::CaptureWindow::from_environment();
   * @endcode
   */
  [[nodiscard]] static CaptureWindow from_environment(CaptureOptions options = {}) {
    return CaptureWindow(Tag{}, CaptureSchedule{}, false, std::move(options));
  }

  CaptureWindow(CaptureWindow const&) = delete;
  CaptureWindow(CaptureWindow&&) = delete;
  CaptureWindow& operator=(CaptureWindow const&) = delete;
  CaptureWindow& operator=(CaptureWindow&&) = delete;

  /// Closes the window (an open capture stops, see close()). A step still open outlives it
  /// safely: it only ends its own range.
  ~CaptureWindow() noexcept {
    close();
    if (CaptureStep* s = open_step_.exchange(nullptr, std::memory_order_acq_rel)) {
      s->window_ = nullptr;
    }
  }

  /**
   * @brief Begins the next step; it ends when the returned object is destroyed (or its end()).
   *
   * If the step is the first active step of a window, the capture starts before its range.
   * @throws std::logic_error when called from a thread other than the one of the window's first
   *         step, or while the previous step is still open.
   */
  [[nodiscard]] CaptureStep step() { return CaptureStep{*this}; }

  /**
   * @brief Ends an open capture now (synchronizing first unless told not to) and captures
   *        nothing more: later steps are `off`. Safe from any thread; idempotent.
   */
  void close() noexcept {
    closed_.store(true, std::memory_order_release);
#if NSIGHTKIT_ENABLED
    // No lock when nothing is open (destructors of idle windows); stop_capture checks again.
    if (capturing_.load(std::memory_order_acquire)) {
      stop_capture(next_step_.load(std::memory_order_acquire) - 1, false);
    }
#endif
  }

  /// The phase the schedule in force (after NSIGHTKIT_CAPTURE) gives step `step`; `off` when
  /// capture is switched off. Ignores close().
  [[nodiscard]] CapturePhase phase_of(std::int64_t step) const noexcept {
    return off_ ? CapturePhase::off : schedule_.phase_of(step);
  }

  /// The schedule in force: the code's, or the environment's when it replaced it.
  [[nodiscard]] CaptureSchedule const& schedule() const noexcept { return schedule_; }

  /// True when capture is switched off (environment "off" or a bad value, or from_environment()
  /// without the variable); steps are still numbered and still emit their ranges.
  [[nodiscard]] bool off() const noexcept { return off_; }

  /// True when the environment variable decided the schedule (a schedule, or "off").
  [[nodiscard]] bool schedule_from_environment() const noexcept { return from_env_; }

  /// The number the next step() will get (= steps begun so far).
  [[nodiscard]] std::int64_t next_step() const noexcept {
    return next_step_.load(std::memory_order_acquire);
  }

  /// True while a window is open: between its start and its stop.
  [[nodiscard]] bool capturing() const noexcept {
#if NSIGHTKIT_ENABLED
    return capturing_.load(std::memory_order_acquire);
#else
    return false;
#endif
  }

  /// Calls `f` after each window starts. Register before the first step.
  void on_start(CaptureCallback f) {
#if NSIGHTKIT_ENABLED
    if (f) on_start_.push_back(std::move(f));
#else
    (void)f;
#endif
  }

  /// Calls `f` after each window stops (also when closed early or at exit). Register before
  /// the first step.
  void on_stop(CaptureCallback f) {
#if NSIGHTKIT_ENABLED
    if (f) on_stop_.push_back(std::move(f));
#else
    (void)f;
#endif
  }

 private:
  friend class CaptureStep;
  struct Tag {};

  CaptureWindow(Tag, CaptureSchedule schedule, bool from_code, CaptureOptions options)
      : schedule_{schedule} {
    if (from_code) {
      std::string err = schedule.validation_error();
      if (!err.empty()) fail_argument("nsightkit::CaptureWindow: invalid schedule: " + err);
    } else {
      off_ = true;
    }
#if NSIGHTKIT_ENABLED
    options_ = std::move(options);
    read_environment();
    profiler_ = options_.profiler != nullptr ? options_.profiler : &detail::cuda_driver_profiler();
    driver_profiler_ = profiler_ == &detail::cuda_driver_profiler();
    use_profiler_api_ = has_backend(options_.backends, CaptureBackend::cuda_profiler);
    use_nvtx_ = has_backend(options_.backends, CaptureBackend::nvtx_range) &&
                options_.nvtx_range_name != nullptr;
    if (!use_profiler_api_ && !options_.synchronize_before_stop) profiler_ = nullptr;
    link_.owner = this;
    link_.close_for_exit = &CaptureWindow::close_for_exit;
#else
    (void)options;
#endif
  }

  /// Reports a programming error: an exception, or (without exceptions) a message and capture off.
  void fail_argument(std::string const& message) {
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
    throw std::invalid_argument(message);
#else
    std::fprintf(stderr, "nsightkit: %s; capture disabled\n", message.c_str());
    off_ = true;
#endif
  }

  void begin_step(CaptureStep& s) {
    std::thread::id const me = std::this_thread::get_id();
    std::thread::id owner{};
    if (!owner_.compare_exchange_strong(owner, me, std::memory_order_acq_rel) && owner != me) {
      misuse(
          "nsightkit::CaptureWindow::step(): called from a second thread; all steps of a window "
          "must come from the thread that began its first step (use one window per loop)");
      return;
    }
    CaptureStep* open = nullptr;
    if (!open_step_.compare_exchange_strong(open, &s, std::memory_order_acq_rel)) {
      misuse("nsightkit::CaptureWindow::step(): step " + std::to_string(open->number_) +
             " is still open; end each step before beginning the next (one `auto step = "
             "window.step();` per loop iteration)");
      return;
    }
    std::int64_t const n = next_step_.fetch_add(1, std::memory_order_acq_rel);
    s.number_ = n;
    s.phase_ = closed_.load(std::memory_order_acquire) ? CapturePhase::off : phase_of(n);
    s.open_ = true;
#if NSIGHTKIT_ENABLED
    detail::capture_state.last_step.store(n, std::memory_order_release);
    if (s.phase_ == CapturePhase::active && schedule_.starts_window(n)) start_capture(n);
    static constexpr Attributes step_attributes{detail::step_category()};
    s.range_ = detail::emit_formatted<DefaultDomain, detail::Op::push>(
        step_attributes, fmt::string_view{"step {}"}, n);
#endif
  }

  void end_step(CaptureStep& s) noexcept {
#if NSIGHTKIT_ENABLED
    if (s.phase_ == CapturePhase::active && schedule_.ends_window(s.number_)) {
      stop_capture(s.number_, true);
    }
#endif
    CaptureStep* expected = &s;
    open_step_.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
  }

  void misuse(std::string const& message) {
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
    throw std::logic_error(message);
#else
    std::fprintf(stderr, "nsightkit: %s; this step is ignored\n", message.c_str());
#endif
  }

#if NSIGHTKIT_ENABLED
  /// What happened at an edge, delivered after the registry lock is released.
  struct Edge {
    bool started{false};
    bool stopped{false};
    bool first_active{false};  // the process had no active window before this one started
    bool last_active{false};   // no window of the process is active after this one stopped
    CaptureEvent event{};
    std::vector<std::string> messages{};
  };

  void read_environment() {
    char const* var = options_.environment_variable;
    if (var == nullptr || *var == '\0') return;
    char const* raw = std::getenv(var);
    if (raw == nullptr || detail::trim(raw).empty()) return;
    if (detail::is_off_word(raw)) {
      off_ = true;
      from_env_ = true;
      return;
    }
    std::string err;
    if (std::optional<CaptureSchedule> s = CaptureSchedule::parse(raw, &err)) {
      schedule_ = *s;
      off_ = false;
      from_env_ = true;
      return;
    }
    std::string message = std::string{var} + "=\"" + raw + "\": " + err;
    if (options_.strict_environment) fail_argument(message);
    off_ = true;
    report(message +
           "; capture disabled (expected e.g. \"wait=10,warmup=2,active=3,repeat=1\", or \"off\")");
  }

  void report(std::string const& message) const noexcept {
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
    try {
#endif
      if (options_.diagnostics) {
        options_.diagnostics(message);
      } else {
        std::fprintf(stderr, "nsightkit: %s\n", message.c_str());
      }
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
    } catch (...) {
      std::fprintf(stderr, "nsightkit: %s\n", message.c_str());
    }
#endif
  }

  /// Calls a backend function; "" on success, else its message (an exception counts as one).
  template <class F>
  static std::string call_backend(F&& f) noexcept {
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
    try {
      return f();
    } catch (std::exception const& e) {
      try {
        return std::string{"the profiler backend threw: "} + e.what();
      } catch (...) {
        return "?";
      }
    } catch (...) {
      return "the profiler backend threw an unknown exception";
    }
#else
    return f();
#endif
  }

  /// Without a CUDA driver or device the default profiler can do nothing: one clear line instead
  /// of a failing call's error (start or synchronize, whichever this window would call first).
  void drop_profiler_without_driver(Edge& edge) noexcept {
    if (detail::cuda_driver::api().unavailable == nullptr) return;
    profiler_ = nullptr;
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
    try {
#endif
      std::string why = detail::describe_no_cuda_driver();
      why += ": capture continues without the profiler";
      edge.messages.push_back("CaptureWindow: " + why);
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
    } catch (...) {
    }
#endif
  }

  static void add_message(Edge& edge, std::string const& what, char const* consequence) noexcept {
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
    try {
#endif
      edge.messages.push_back("CaptureWindow: " + what + "; " + consequence);
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
    } catch (...) {
    }
#endif
  }

  void start_capture(std::int64_t first) noexcept {
    Edge edge;
    {
      std::lock_guard<std::mutex> lock{detail::capture::registry.mutex};
      if (closed_.load(std::memory_order_acquire) || capturing_.load(std::memory_order_acquire)) {
        return;
      }
      if (driver_profiler_ && profiler_ != nullptr) drop_profiler_without_driver(edge);
      if (use_profiler_api_ && profiler_ != nullptr) {
        std::string err = call_backend([this] { return profiler_->start(); });
        if (!err.empty()) {
          add_message(edge, err, "capture continues without the profiler backend");
          profiler_ = nullptr;
        }
      }
      if (use_nvtx_) nvtx_window_.emplace(Attributes{}, options_.nvtx_range_name);
      window_first_ = first;
      capturing_.store(true, std::memory_order_release);
      edge.first_active =
          detail::capture_state.active_windows.fetch_add(1, std::memory_order_acq_rel) == 0;
      detail::capture::link(link_);
      detail::capture::install_exit_handler();
      std::int64_t const last = first > std::numeric_limits<std::int64_t>::max() - schedule_.active
                                    ? std::numeric_limits<std::int64_t>::max()
                                    : first + schedule_.active - 1;
      edge.event = CaptureEvent{first, last, schedule_.cycle_of(first), false};
      edge.started = true;
    }
    deliver(edge);
  }

  void stop_capture(std::int64_t last, bool complete) noexcept {
    Edge edge;
    {
      std::lock_guard<std::mutex> lock{detail::capture::registry.mutex};
      if (!capturing_.load(std::memory_order_acquire)) return;
      bool failed = false;
      if (options_.synchronize_before_stop && profiler_ != nullptr) {
        std::string err = call_backend([this] { return profiler_->synchronize(); });
        if (!err.empty()) {
          add_message(edge, err, "capture continues without the profiler backend");
          failed = true;
        }
      }
      nvtx_window_.reset();  // ends the range
      if (use_profiler_api_ && profiler_ != nullptr) {
        std::string err = call_backend([this] { return profiler_->stop(); });
        if (!err.empty()) {
          add_message(edge, err, "capture continues without the profiler backend");
          failed = true;
        }
      }
      if (failed) profiler_ = nullptr;
      capturing_.store(false, std::memory_order_release);
      edge.last_active =
          detail::capture_state.active_windows.fetch_sub(1, std::memory_order_acq_rel) == 1;
      detail::capture::unlink(link_);
      edge.event = CaptureEvent{window_first_, last < window_first_ ? window_first_ : last,
                                schedule_.cycle_of(window_first_), complete};
      edge.stopped = true;
    }
    deliver(edge);
  }

  /// Diagnostics first, then callbacks; outside the lock, so callbacks may use windows.
  void deliver(Edge const& edge) noexcept {
    for (auto const& m : edge.messages) report(m);
    if (edge.first_active) detail::capture_notify(true);
    if (edge.last_active) detail::capture_notify(false);
    auto const& callbacks = edge.started ? on_start_ : on_stop_;
    if (!edge.started && !edge.stopped) return;
    for (auto const& f : callbacks) {
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
      try {
        f(edge.event);
      } catch (std::exception const& e) {
        report(std::string{"CaptureWindow: an "} + (edge.started ? "on_start" : "on_stop") +
               " callback threw: " + e.what() + "; ignored");
      } catch (...) {
        report(std::string{"CaptureWindow: an "} + (edge.started ? "on_start" : "on_stop") +
               " callback threw; ignored");
      }
#else
      f(edge.event);
#endif
    }
  }

  static void close_for_exit(void* owner) noexcept { static_cast<CaptureWindow*>(owner)->close(); }
#endif  // NSIGHTKIT_ENABLED

  CaptureSchedule schedule_;
  bool off_{false};
  bool from_env_{false};
  std::atomic<std::int64_t> next_step_{0};
  std::atomic<std::thread::id> owner_{};
  std::atomic<CaptureStep*> open_step_{nullptr};
  std::atomic<bool> closed_{false};
#if NSIGHTKIT_ENABLED
  CaptureOptions options_{};
  ProfilerBackend* profiler_{nullptr};  // null once it failed; guarded by the registry mutex
  bool driver_profiler_{false};         // profiler_ was cuda_profiler_backend()
  bool use_profiler_api_{false};
  bool use_nvtx_{false};
  std::atomic<bool> capturing_{false};
  std::int64_t window_first_{0};
  std::optional<UniqueRange> nvtx_window_{};  // engaged while the NVTX window range is open
  std::vector<CaptureCallback> on_start_{};
  std::vector<CaptureCallback> on_stop_{};
  detail::capture::Link link_{};
#endif
};

inline CaptureStep::CaptureStep(CaptureWindow& window) : window_{&window} {
  window.begin_step(*this);
  if (!open_) window_ = nullptr;  // rejected without exceptions: an inert step
}

inline void CaptureStep::end() noexcept {
  if (!open_) return;
  open_ = false;
#if NSIGHTKIT_ENABLED
  detail::end_push<DefaultDomain>(std::exchange(range_, detail::Emitted{}));
#endif
  if (window_ != nullptr) window_->end_step(*this);
}

NSIGHTKIT_DETAIL_END_NAMESPACE
