// Internal: CaptureWindow's small members whose enabled and disabled (NSIGHTKIT_DISABLE: nothing
// is ever captured) bodies differ, side by side, so capture.hpp declares them once. Inline in
// every mode: close() and capturing() may be called from any thread and often; capture.hpp
// includes this at its end.
#pragma once

#include <nsightkit/capture.hpp>
#include <nsightkit/capture_types.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/detail/capture_state.hpp>

#include <atomic>
#include <cstdint>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

inline void CaptureWindow::close() noexcept {
  closed_.store(true, std::memory_order_seq_cst);  // seq_cst: see start_capture and arm
#if NSIGHTKIT_ENABLED
  if (counted_.exchange(false, std::memory_order_acq_rel)) {
    detail::capture_state.windows.fetch_sub(1, std::memory_order_acq_rel);
  }
  // No lock when nothing is open (destructors of idle windows); stop_capture checks again.
  if (capturing_.load(std::memory_order_seq_cst)) {  // seq_cst: see start_capture
    stop_capture(next_step_.load(std::memory_order_acquire) - 1, false);
  }
  if (armed_.load(std::memory_order_seq_cst)) disarm();
#endif
}

inline CapturePhase CaptureWindow::phase_of(std::int64_t step) const noexcept {
  if (off_) return CapturePhase::off;
#if NSIGHTKIT_ENABLED
  std::int64_t const d = demand_first_.load(std::memory_order_acquire);
  if (d >= 0 && step >= d) {
    std::int64_t const k = step - d;
    if (k < schedule_.warmup) return CapturePhase::warmup;
    if (k - schedule_.warmup < schedule_.active) return CapturePhase::active;
  }
#endif
  return schedule_.phase_of(step);
}

inline bool CaptureWindow::capturing() const noexcept {
#if NSIGHTKIT_ENABLED
  return capturing_.load(std::memory_order_acquire);
#else
  return false;
#endif
}

inline void CaptureWindow::end_step(CaptureStep& s) noexcept {
#if NSIGHTKIT_ENABLED
  if (s.phase_ == CapturePhase::active && ends_at(s.number_)) stop_capture(s.number_, true);
#endif
  CaptureStep* expected = &s;
  open_step_.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
}

NSIGHTKIT_DETAIL_END_NAMESPACE
