// Internal: the contract between the capture window (capture.hpp) and in-process consumers such as
// the report (report.hpp), so neither header needs the other.
//
// - A capture-window step range carries Category{step_category_id, step_category_name}; consumers
//   treat such ranges as step boundaries (not as path components).
// - capture_state says whether a capture window is currently active (between the profiler's start
//   and stop, or the NVTX window range), so a consumer can aggregate captured steps only, and
//   whether one is armed (in the warm-up steps before its active ones), so a consumer can start
//   costly collection early and pay its start-up outside the captured steps.
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

/// Told when a window is armed or the first window becomes active (true), and when the last
/// active one stops or an armed one closes without starting (false), outside the windows' locks.
/// The report uses it to collect GPU activity only during warm-up and captured steps (captured
/// mode) and to settle GPU work at a window's end; capture_wanted() says what is wanted now.
using CaptureListener = void (*)(bool active) noexcept;

/// Process-wide capture status, written by CaptureWindow, read by consumers.
struct CaptureState {
  std::atomic<int> active_windows{0};              ///< windows currently in their active phase
  std::atomic<int> armed_windows{0};               ///< windows in warm-up steps before active ones
  std::atomic<std::int64_t> last_step{-1};         ///< number of the most recent step begun
  std::atomic<CaptureListener> listener{nullptr};  ///< the report's, when it runs
};

NSIGHTKIT_DETAIL_VISIBLE inline CaptureState capture_state{};

/// Calls the listener, if any.
inline void capture_notify(bool active) noexcept {
  if (CaptureListener l = capture_state.listener.load(std::memory_order_acquire)) l(active);
}

/// True while at least one capture window is active.
inline bool capture_active() noexcept {
  return capture_state.active_windows.load(std::memory_order_acquire) > 0;
}

/// True while a window is active or armed: collection that starts slowly should be running.
inline bool capture_wanted() noexcept {
  return capture_active() || capture_state.armed_windows.load(std::memory_order_acquire) > 0;
}

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
