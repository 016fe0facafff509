/**
 * @file capture_types.hpp
 * @brief The plain types of capture windows (see capture.hpp): CapturePhase, CaptureSchedule,
 *        the CaptureBackend flags, the ProfilerBackend interface, CaptureEvent and
 *        CaptureOptions.
 *
 * No NVTX, no CUDA and no window state: code that computes schedules or implements a profiler
 * backend includes this header alone.
 *
 * **Steps** are numbered from 0 in the order step() is called. With `skip_first = s`,
 * `wait = w`, `warmup = u`, `active = a`, steps `0 .. s-1` are skipped, then each cycle of
 * `w + u + a` steps has `w` waiting steps, `u` warm-up steps and `a` active (captured) steps;
 * `repeat` cycles run (0 = forever), every later step is `done`. A capture may also be
 * requested while the program runs (request_capture() in capture.hpp): a window not inside a
 * cycle of its own then makes its next `u` steps warm-up steps and the `a` after them active; an
 * `on_demand` schedule runs no cycle until asked. Example: `{5, 2, 3}` gives
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
 *   "nsightkit") spanning each window, for `nsys profile --capture-range=nvtx -p
 *   capture@nsightkit` (nsys writes `range@domain`; ncu writes `domain@range`:
 *   `ncu --nvtx --nvtx-include nsightkit@capture`). nsys matches registered strings only unless
 *   NSYS_NVTX_PROFILER_REGISTER_ONLY=0; the window range is registered, the formatted "step N"
 *   ranges are not.
 * - callbacks: on_start / on_stop with the window's step numbers (CaptureEvent).
 *
 * @code
 * constexpr nsightkit::CaptureSchedule s{5, 2, 3};           // wait, warmup, active
 * static_assert(s.phase_of(7) == nsightkit::CapturePhase::active);
 * auto parsed = nsightkit::CaptureSchedule::parse("wait=5,warmup=2,active=3");
 * @endcode
 */
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/detail/function.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

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

/// The lowercase name of a phase. @param p the phase.
/// @return "skip", "wait", "warmup", "active", "done" or "off" ("?" for a value out of range).
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
 * warmup=2, active=3 (repeat=1, skip_first=0). Steps count from 0. A plain value: every member
 * function is const (all but validation_error() and parse() constexpr and noexcept).
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
  /// No cycle runs by itself: steps `wait` until a capture is requested (request_capture(), or the
  /// report's trigger signal or file), then the next `warmup` and `active` steps are captured.
  /// Any window also captures on request once its own cycles are done or between them.
  bool on_demand{false};

  /// A window that captures only when asked (see on_demand).
  /// @param warmup steps before the captured ones. @param active captured steps (at least 1).
  /// @return the schedule.
  static constexpr CaptureSchedule requested(std::int64_t warmup, std::int64_t active) noexcept {
    return CaptureSchedule{0, warmup, active, 1, 0, true};
  }

  /// Steps in one cycle. @return wait + warmup + active (meaningful for a valid schedule).
  [[nodiscard]] constexpr std::int64_t cycle_length() const noexcept {
    return wait + warmup + active;
  }

  /// The phase of a step by the schedule alone, without requested captures (meaningful for a
  /// valid schedule).
  /// @param step the step number (steps before 0 are `skip`).
  /// @return skip, wait, warmup, active or done (never off; `wait` for every step after
  ///         skip_first of an on_demand schedule).
  [[nodiscard]] constexpr CapturePhase phase_of(std::int64_t step) const noexcept {
    if (step < skip_first) return CapturePhase::skip;
    if (on_demand) return CapturePhase::wait;
    std::int64_t const s = step - skip_first;
    std::int64_t const cycle = cycle_length();
    if (cycle <= 0) return CapturePhase::done;
    if (repeat > 0 && s / cycle >= repeat) return CapturePhase::done;
    std::int64_t const pos = s % cycle;
    if (pos < wait) return CapturePhase::wait;
    if (pos < wait + warmup) return CapturePhase::warmup;
    return CapturePhase::active;
  }

  /// Whether a capture starts before `step`. @param step the step number.
  /// @return true when `step` is the first active step of a cycle.
  [[nodiscard]] constexpr bool starts_window(std::int64_t step) const noexcept {
    return phase_of(step) == CapturePhase::active &&
           (step - skip_first) % cycle_length() == wait + warmup;
  }

  /// Whether the capture stops after `step`. @param step the step number.
  /// @return true when `step` is the last active step of a cycle.
  [[nodiscard]] constexpr bool ends_window(std::int64_t step) const noexcept {
    return phase_of(step) == CapturePhase::active &&
           (step - skip_first) % cycle_length() == cycle_length() - 1;
  }

  /// The cycle a step belongs to. @param step the step number.
  /// @return 0 for the first cycle, 1 for the next, ...; -1 for a skipped step (or an empty
  ///         cycle). Steps after the last cycle get cycle numbers past `repeat - 1`.
  [[nodiscard]] constexpr std::int64_t cycle_of(std::int64_t step) const noexcept {
    if (step < skip_first || cycle_length() <= 0) return -1;
    return (step - skip_first) / cycle_length();
  }

  /// Checks the schedule: no negative field, active at least 1, a cycle that does not overflow.
  /// @return "" when the schedule is valid, else what is wrong with it (one sentence).
  /// @throws std::bad_alloc when the text cannot be built.
  [[nodiscard]] std::string validation_error() const;

  /**
   * @brief Parses "wait=10,warmup=2,active=3,repeat=1[,skip_first=N]" or
   *        "on-demand,warmup=2,active=3" (NSIGHTKIT_CAPTURE's grammar, without the "off" words).
   * @param text the schedule; blanks around keys and values are ignored.
   * @param error when not null, receives what is wrong (naming the bad part) on failure.
   * @return the schedule, or std::nullopt when `text` is malformed or contradictory.
   * @throws std::bad_alloc when the error text cannot be built.
   */
  [[nodiscard]] static std::optional<CaptureSchedule> parse(std::string_view text,
                                                            std::string* error = nullptr);

  /// Schedules compare field by field. @param a the first schedule. @param b the second.
  /// @return true when every field is equal.
  friend constexpr bool operator==(CaptureSchedule const& a, CaptureSchedule const& b) noexcept {
    return a.wait == b.wait && a.warmup == b.warmup && a.active == b.active &&
           a.repeat == b.repeat && a.skip_first == b.skip_first && a.on_demand == b.on_demand;
  }
  /// Schedules compare field by field. @param a the first schedule. @param b the second.
  /// @return true when a field differs.
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

/// The union of two backend sets. @param a the first set. @param b the second.
/// @return the backends of either.
constexpr CaptureBackend operator|(CaptureBackend a, CaptureBackend b) noexcept {
  return static_cast<CaptureBackend>(static_cast<unsigned>(a) | static_cast<unsigned>(b));
}
/// The intersection of two backend sets. @param a the first set. @param b the second.
/// @return the backends of both.
constexpr CaptureBackend operator&(CaptureBackend a, CaptureBackend b) noexcept {
  return static_cast<CaptureBackend>(static_cast<unsigned>(a) & static_cast<unsigned>(b));
}
/// Whether a set holds some backends. @param set the set. @param b the backends looked for.
/// @return true when `set` contains every backend of `b` (false for CaptureBackend::none).
constexpr bool has_backend(CaptureBackend set, CaptureBackend b) noexcept {
  return (set & b) == b && b != CaptureBackend::none;
}

/**
 * @brief What a window calls to start, synchronize and stop a profiler. The default is the CUDA
 *        driver's profiler API (cuda_profiler_backend()); inject your own to test or to drive
 *        another tool.
 *
 * Each call returns "" on success, else one sentence saying what failed (it becomes the
 * window's diagnostic); a backend that throws counts as failing with the exception's text.
 * Calls are made under a process-wide lock, so they never overlap: a backend must not call back
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
  /// Starts collection. @return "" on success, else what failed.
  virtual std::string start() = 0;
  /// Waits until the device finished the work queued so far. @return "" on success, else what
  /// failed.
  virtual std::string synchronize() = 0;
  /// Stops collection. @return "" on success, else what failed.
  virtual std::string stop() = 0;
  /// Backends are destroyed by their owner, through the derived type or this base.
  virtual ~ProfilerBackend() = default;

 protected:
  /// Only derived backends are constructed.
  ProfilerBackend() = default;
  /// Derived backends may be copied.
  ProfilerBackend(ProfilerBackend const&) = default;
  /// Derived backends may be assigned. @return `*this`.
  ProfilerBackend& operator=(ProfilerBackend const&) = default;
};

/// The step numbers of a window, given to on_start / on_stop callbacks.
struct CaptureEvent {
  std::int64_t first_step{0};  ///< the window's first active step
  /// on_start: the last step the schedule will capture in this window; on_stop: the last step
  /// begun inside the window (smaller when the window was closed early).
  std::int64_t last_step{0};
  std::int64_t cycle{0};  ///< which window: 0 for the first cycle, 1 for the next, ...
  bool complete{false};   ///< on_stop: the window ran to its scheduled end; on_start: false
  /// The window was begun by a request (request_capture(), the report's trigger signal or file);
  /// `cycle` then counts the window's requested captures from 0.
  bool requested{false};
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

NSIGHTKIT_DETAIL_END_NAMESPACE

#if !NSIGHTKIT_DETAIL_COMPILED
#include <nsightkit/detail/capture/schedule_parse.hpp>
#endif
