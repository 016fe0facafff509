// Internal: the contract between the capture window (capture.hpp) and in-process consumers such as
// the report (report.hpp), so neither header needs the other.
//
// - A capture-window step range carries Category{step_category_id, step_category_name}; consumers
//   treat such ranges as step boundaries (not as path components).
// - capture_state says whether a capture window is currently active (between the profiler's start
//   and stop, or the NVTX window range), so a consumer can aggregate captured steps only, and
//   whether one is armed (in the warm-up steps before its active ones), so a consumer can start
//   costly collection early and pay its start-up outside the captured steps.
// - A capture can be requested while the program runs (request_capture(): a signal or a file the
//   report watches, or the program itself): windows capture their next steps, and the report
//   writes its outputs when a requested window stops (requested_stops).
#pragma once

#include <nsightkit/attributes.hpp>
#include <nsightkit/config.hpp>

#include <atomic>
#include <cstdint>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {

/// Category id of capture-window step ranges ("NSK" + 1).
inline constexpr std::uint32_t step_category_id = 0x4E534B01u;
/// Category name of capture-window step ranges, as the tools show it.
inline constexpr char const* step_category_name = "nsightkit step";

/// The category a step range carries.
inline constexpr Category step_category() noexcept {
  return Category{step_category_id, step_category_name};
}

/// True when `a` marks a capture-window step range.
inline bool is_step_range(Attributes const& a) noexcept {
  return a.has_category() && a.category().id() == step_category_id;
}

/// What a window's edge changed, as the listener is told (outside the windows' locks).
enum class CaptureEdge : int {
  armed,     ///< a window began its warm-up steps
  started,   ///< the first window of the process became active
  stopped,   ///< the last active window stopped
  disarmed,  ///< an armed window was closed before it started
};

/// The report's listener: it collects GPU activity only during warm-up and captured steps
/// (window-only mode; capture_wanted() says whether that is now) and settles GPU work when the
/// last active window stops.
using CaptureListener = void (*)(CaptureEdge edge) noexcept;

/// Process-wide capture status, written by CaptureWindow, read by consumers.
struct CaptureState {
  std::atomic<int> active_windows{0};              ///< windows currently in their active phase
  std::atomic<int> armed_windows{0};               ///< windows in warm-up steps before active ones
  std::atomic<std::int64_t> last_step{-1};         ///< number of the most recent step begun
  std::atomic<CaptureListener> listener{nullptr};  ///< the report's, when it runs
  std::atomic<int> windows{0};                     ///< windows that can capture (not off)
  /// Captures requested (request_capture()): each window that sees the count change captures its
  /// next warm-up and active steps, once it is not in a window of its schedule.
  std::atomic<std::uint64_t> requests{0};
  /// Windows begun by a request that stopped; counted before the `stopped` edge is told.
  std::atomic<std::uint64_t> requested_stops{0};
};

NSIGHTKIT_DETAIL_VISIBLE inline CaptureState capture_state{};

/// Asks every capture window of the process to capture its next warm-up and active steps
/// (nsightkit::request_capture(), the report's trigger signal and file).
inline void request_capture() noexcept {
  capture_state.requests.fetch_add(1, std::memory_order_acq_rel);
}

/// Calls the listener, if any.
inline void capture_notify(CaptureEdge edge) noexcept {
  if (CaptureListener l = capture_state.listener.load(std::memory_order_acquire)) l(edge);
}

/// True while at least one capture window is active.
inline bool capture_active() noexcept {
  return capture_state.active_windows.load(std::memory_order_acquire) > 0;
}

/// True while a window is active or armed: collection that starts slowly should be running.
/// Armed first: a window that starts counts as active before it stops counting as armed.
inline bool capture_wanted() noexcept {
  return capture_state.armed_windows.load(std::memory_order_acquire) > 0 || capture_active();
}

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
