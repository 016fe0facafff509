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
 * The schedule, the backends and the callback events are plain types in capture_types.hpp. Each
 * step is an NVTX push/pop range "step N" in the "nsightkit" domain (in-process consumers such as
 * the report see it too). At a window start: profiler start, NVTX window range, on_start, then the
 * step's range; at a window end: the step's range ends, device sync, NVTX window range ends,
 * profiler stop, on_stop.
 *
 * `NSIGHTKIT_CAPTURE` (read when a window is constructed) replaces the code's schedule as a whole
 * or switches capture off (`0`, `off`, `none`, `false`, `no`); a malformed value prints one
 * message naming it and switches capture off for that window, never captures another window. A
 * failing profiler call prints one message, and capture goes on without that backend. Open
 * captures end on close(), on destruction and at exit() (a std::atexit handler; not on abort or
 * a fatal signal).
 *
 * Under `NSIGHTKIT_DISABLE` a window still numbers steps and computes their phases from the code's
 * schedule (with the same misuse checks), but reads no environment, calls no backend, emits no
 * NVTX and runs no callback. The user guide: docs/capture-window.md.
 */
#pragma once

#include <nsightkit/attributes.hpp>
#include <nsightkit/capture_types.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/detail/capture/entry.hpp>
#include <nsightkit/detail/capture_state.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/detail/function.hpp>
#include <nsightkit/range.hpp>
// cuda_profiler_backend()'s definition: in src/nsightkit.cpp when compiled and enabled.
#if !NSIGHTKIT_DETAIL_COMPILED || !NSIGHTKIT_ENABLED
#include <nsightkit/detail/capture/cuda.hpp>
#endif

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

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
 * stops with the stop() that matches the last one; start() and stop() lock, so any thread may
 * call them. Available in every build, with or without the CUDA headers (NSIGHTKIT_HAS_CUDA);
 * calling it directly works the same under NSIGHTKIT_DISABLE (only windows are silenced).
 * @return the one backend of the process (never destroyed).
 * @throws std::bad_alloc on the first call, when the backend cannot be created.
 *
 * @code
 * auto& cuda = nsightkit::cuda_profiler_backend();
 * if (std::string err = cuda.start(); !err.empty()) std::fprintf(stderr, "%s\n", err.c_str());
 * @endcode
 */
inline ProfilerBackend& cuda_profiler_backend() { return detail::capture::driver_profiler(); }

/**
 * @brief Asks every CaptureWindow of the process to capture its next steps: a window that is not
 *        inside a cycle of its own schedule makes its next `warmup` steps warm-up steps and the
 *        `active` steps after them captured (the profiler runs, the report counts them under
 *        `window-only`); a window inside a cycle takes the request when that cycle ends.
 *
 * For servers and long jobs that decide while they run (an admin endpoint, a watchdog); the
 * report does the same on its trigger signal (SIGUSR2 by default) or trigger file, and writes
 * its outputs when such a capture ends (docs/long-jobs.md). Requests made while no step begins
 * are taken together. Safe from any thread and from a signal handler (one atomic increment). Does
 * nothing under NSIGHTKIT_DISABLE.
 *
 * @code
 * nsightkit::CaptureWindow window{nsightkit::CaptureSchedule::requested(1, 5)};
 * // elsewhere, e.g. when an admin request arrives:
 * nsightkit::request_capture();
 * @endcode
 */
inline void request_capture() noexcept { detail::capture::request(); }

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
 *   if (step.captured()) std::printf("step %lld\n", static_cast<long long>(step.number()));
 *   train_step(i);
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
  /// capture stops. Later calls and the destructor do nothing. Call it (or let the destructor
  /// run) on the thread that began the step: its NVTX range is pushed on that thread; from
  /// another thread the step ends with one message and without popping another thread's range.
  void end() noexcept;

  /// The step's number. @return 0 for the window's first step, 1 for the next, ...
  [[nodiscard]] std::int64_t number() const noexcept { return number_; }
  /// The step's phase. @return its phase in the window's schedule (`off` once the window was
  /// closed or capture is off).
  [[nodiscard]] CapturePhase phase() const noexcept { return phase_; }
  /// Whether the step is captured. @return true when its phase is `active`.
  [[nodiscard]] bool captured() const noexcept { return phase_ == CapturePhase::active; }

 private:
  friend class CaptureWindow;
  explicit CaptureStep(CaptureWindow& window);

  CaptureWindow* window_;
  std::int64_t number_{-1};
  CapturePhase phase_{CapturePhase::off};
  bool open_{false};
  std::thread::id thread_{};  // the thread that began it: its range ends there
  detail::Emitted range_{};   // where the step's range went (empty under NSIGHTKIT_DISABLE)
};

/**
 * @brief A capture window: counts steps, knows the phase of each, and starts/stops the
 *        profiler, an NVTX window range and callbacks at the edges of the active steps.
 *
 * Not copyable or movable. See the file documentation for the environment variable, errors,
 * ends and NSIGHTKIT_DISABLE.
 *
 * Thread safety: steps may come from any thread, one at a time (a server's workers taking turns
 * with one window): a step begins and ends on one thread, and the next step begins after it ended
 * (step() while another thread's step is open throws, see step()). close(), capturing(),
 * next_step() and the destructor may be called from any thread. Register callbacks before the
 * first step.
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
   * @param options backends, synchronization, environment variable, diagnostics.
   * @return the window (capture off when the variable is unset, empty or an off word).
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
  ~CaptureWindow() noexcept;

  /**
   * @brief Begins the next step; it ends when the returned object is destroyed (or its end()).
   *
   * If the step is the first active step of a window, the capture starts before its range.
   * @return the step; keep it in a variable for the duration of the step.
   * @throws std::logic_error while the previous step is still open, on this thread or another
   *         (steps of one window do not overlap; threads that serve requests at the same time
   *         need a window each); without exceptions: a message, and an inert step.
   */
  [[nodiscard]] CaptureStep step() { return CaptureStep{*this}; }

  /**
   * @brief Ends an open capture now (synchronizing first unless told not to) and captures
   *        nothing more: later steps are `off`. Safe from any thread; idempotent.
   */
  void close() noexcept;

  /// The phase of a step by the schedule in force (after NSIGHTKIT_CAPTURE) and the latest
  /// requested capture (request_capture()). Ignores close().
  /// @param step the step number.
  /// @return the phase, or `off` when capture is switched off.
  [[nodiscard]] CapturePhase phase_of(std::int64_t step) const noexcept;

  /// The schedule in force. @return the code's, or the environment's when it replaced it.
  [[nodiscard]] CaptureSchedule const& schedule() const noexcept { return schedule_; }

  /// Whether capture is switched off; steps are still numbered and still emit their ranges.
  /// @return true for an environment off word or bad value, or from_environment() without the
  ///         variable (close() does not change it).
  [[nodiscard]] bool off() const noexcept { return off_; }

  /// Where the schedule came from.
  /// @return true when the environment variable decided it (a schedule, or an off word).
  [[nodiscard]] bool schedule_from_environment() const noexcept { return from_env_; }

  /// The number the next step() will get. @return the steps begun so far.
  [[nodiscard]] std::int64_t next_step() const noexcept {
    return next_step_.load(std::memory_order_acquire);
  }

  /// Whether a capture is open. @return true between a window's start and its stop (always
  /// false under `NSIGHTKIT_DISABLE`).
  [[nodiscard]] bool capturing() const noexcept;

  /// Calls `f` after each window starts, outside the window's lock (it may use windows). Register
  /// before the first step, from the thread that owns the window.
  /// @param f the callback; empty: ignored. Its exceptions are reported and dropped.
  /// @throws std::bad_alloc when it cannot be stored.
  void on_start(CaptureCallback f);

  /// Calls `f` after each window stops (also when closed early or at exit). Register before the
  /// first step, from the thread that owns the window.
  /// @param f the callback; empty: ignored. Its exceptions are reported and dropped.
  /// @throws std::bad_alloc when it cannot be stored.
  void on_stop(CaptureCallback f);

 private:
  friend class CaptureStep;
  struct Tag {};

  CaptureWindow(Tag, CaptureSchedule schedule, bool from_code, CaptureOptions options);

  /// A schedule given in code must be valid; without one, capture is off until the environment
  /// gives one.
  void check_schedule(bool from_code);

  /// Reports a programming error: an exception, or (without exceptions) a message and capture off.
  void fail_argument(std::string const& message);

  /// Begins step `s`, or rejects it while another step is open (misuse()).
  void begin_step(CaptureStep& s);

  void end_step(CaptureStep& s) noexcept;

  /// Reports a step that overlaps the open one: an exception, or (without exceptions) a message.
  void misuse(std::string const& message);

  CaptureSchedule schedule_;
  bool off_{false};
  bool from_env_{false};
  std::atomic<std::int64_t> next_step_{0};
  std::atomic<CaptureStep*> open_step_{nullptr};
  std::atomic<bool> closed_{false};

  // The rest exists only when enabled: what drives the profiler, the NVTX window and requests.
#if NSIGHTKIT_ENABLED
  /// Whether `step` belongs to the latest requested capture.
  bool in_request(std::int64_t step) const noexcept {
    std::int64_t const d = demand_first_.load(std::memory_order_acquire);
    return d >= 0 && step >= d && step - d < schedule_.warmup + schedule_.active;
  }
  /// Whether a capture starts before `step` (its first active step).
  bool starts_at(std::int64_t step) const noexcept {
    if (in_request(step)) {
      return step - demand_first_.load(std::memory_order_relaxed) == schedule_.warmup;
    }
    return schedule_.starts_window(step);
  }
  /// Whether the capture stops after `step` (its last active step).
  bool ends_at(std::int64_t step) const noexcept {
    if (in_request(step)) {
      return step - demand_first_.load(std::memory_order_relaxed) ==
             schedule_.warmup + schedule_.active - 1;
    }
    return schedule_.ends_window(step);
  }
  /// Takes a capture request made since the last one this window took, unless the window is in
  /// a cycle (of its schedule or of an earlier request): then a later step takes it. Called by
  /// the step that begins, alone (steps do not overlap).
  void take_request(std::int64_t step) noexcept {
    std::uint64_t const r = detail::capture_state.requests.load(std::memory_order_acquire);
    if (r == requests_seen_) return;
    if (capturing_.load(std::memory_order_acquire) || armed_.load(std::memory_order_acquire) ||
        in_request(step)) {
      return;
    }
    CapturePhase const own = schedule_.phase_of(step);
    if (own == CapturePhase::warmup || own == CapturePhase::active) return;
    requests_seen_ = r;
    demand_first_.store(step, std::memory_order_release);
  }

  /// What happened at an edge, delivered after the registry lock is released.
  struct Edge;

  // The cold paths, defined in detail/capture/window_impl.hpp (in src/nsightkit.cpp in the
  // compiled mode, detail/compiled.hpp).
  /// The constructor's work: the schedule checked, the environment read, the backends chosen.
  void construct(bool from_code, CaptureOptions&& options);
  void read_environment();
  void report(std::string const& message) const noexcept;
  /// Inside a handler: `prefix` + what() of the exception being handled, or `unknown` when it is
  /// not a std::exception ("?" without memory). The one place a caught exception's text is read.
  static std::string thrown(std::string const& prefix, char const* unknown) noexcept;
  /// Calls a backend function; "" on success, else its message (an exception counts as one).
  template <class F>
  static std::string call_backend(F&& f) noexcept;
  /// Without a CUDA driver or device the default profiler can do nothing: one clear line instead
  /// of a failing call's error (start or synchronize, whichever this window would call first).
  void drop_profiler_without_driver(Edge& edge) noexcept;
  static void add_message(Edge& edge, std::string const& what, char const* consequence) noexcept;
  void start_capture(std::int64_t first) noexcept;
  void stop_capture(std::int64_t last, bool complete) noexcept;
  /// Warm-up steps began: tells in-process consumers to start collection that starts slowly.
  void arm() noexcept;
  /// Closed while armed: the warm-up's collection is no longer wanted.
  void disarm() noexcept;
  /// Diagnostics first, then callbacks; outside the lock, so callbacks may use windows.
  void deliver(Edge const& edge) noexcept;

  static void close_for_exit(void* owner) noexcept { static_cast<CaptureWindow*>(owner)->close(); }
  CaptureOptions options_{};
  ProfilerBackend* profiler_{nullptr};  // null once it failed; guarded by the registry mutex
  bool driver_profiler_{false};         // profiler_ was cuda_profiler_backend()
  bool use_profiler_api_{false};
  bool use_nvtx_{false};
  std::atomic<bool> capturing_{false};
  std::atomic<bool> armed_{false};    // in warm-up steps, counted in capture_state.armed_windows
  std::atomic<bool> counted_{false};  // counted in capture_state.windows (until closed)
  std::uint64_t requests_seen_{0};    // capture_state.requests taken; by the stepping thread
  std::atomic<std::int64_t> demand_first_{-1};  // first step of the latest requested capture
  std::int64_t requested_windows_{0};           // requested captures begun; registry mutex
  bool window_requested_{false};                // the open capture was requested; registry mutex
  std::int64_t window_first_{0};
  std::optional<UniqueRange> nvtx_window_{};  // engaged while the NVTX window range is open
  std::vector<CaptureCallback> on_start_{};
  std::vector<CaptureCallback> on_stop_{};
  detail::capture::Link link_{};
#endif
};

NSIGHTKIT_DETAIL_END_NAMESPACE

// Members whose enabled and disabled bodies differ; small, so inline in every mode.
#include <nsightkit/detail/capture/window_inline.hpp>
#if !NSIGHTKIT_DETAIL_COMPILED
#include <nsightkit/detail/capture/step_impl.hpp>
#if NSIGHTKIT_ENABLED
#include <nsightkit/detail/capture/window_impl.hpp>
#endif
#endif
