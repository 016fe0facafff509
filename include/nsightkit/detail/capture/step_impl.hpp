// Internal: the members of CaptureWindow and CaptureStep (capture.hpp) that every mode has and that
// build messages, format the step's range name or touch the window's options and callbacks —
// constructing and destroying a window, checking the schedule, reporting misuse, adding callbacks,
// beginning and ending a step (once per step: a call costs nothing there, and a translation unit
// with a window generates none of it). Header-only, capture.hpp includes them; in the compiled mode
// (detail/compiled.hpp) src/nsightkit.cpp defines them once, in its enabled and disabled builds
// alike.
#pragma once

#include <nsightkit/attributes.hpp>
#include <nsightkit/capture.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/detail/capture_state.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/range.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

NSIGHTKIT_DETAIL_MEMBER CaptureWindow::CaptureWindow(Tag, CaptureSchedule schedule, bool from_code,
                                                     CaptureOptions options)
    : schedule_{schedule} {
#if NSIGHTKIT_ENABLED
  construct(from_code, std::move(options));
#else
  check_schedule(from_code);
  (void)options;
#endif
}

NSIGHTKIT_DETAIL_MEMBER CaptureWindow::~CaptureWindow() noexcept {
  close();
  if (CaptureStep* s = open_step_.exchange(nullptr, std::memory_order_acq_rel)) {
    s->window_ = nullptr;
  }
}

NSIGHTKIT_DETAIL_MEMBER void CaptureWindow::check_schedule(bool from_code) {
  if (from_code) {
    std::string err = schedule_.validation_error();
    if (!err.empty()) fail_argument("nsightkit::CaptureWindow: invalid schedule: " + err);
  } else {
    off_ = true;
  }
}

NSIGHTKIT_DETAIL_MEMBER void CaptureWindow::fail_argument(std::string const& message) {
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  throw std::invalid_argument(message);
#else
  std::fprintf(stderr, "nsightkit: %s; capture disabled\n", message.c_str());
  off_ = true;
#endif
}

NSIGHTKIT_DETAIL_MEMBER void CaptureWindow::begin_step(CaptureStep& s) {
  CaptureStep* open = nullptr;
  if (!open_step_.compare_exchange_strong(open, &s, std::memory_order_acq_rel)) {
    misuse("nsightkit::CaptureWindow::step(): step " +
           std::to_string(next_step_.load(std::memory_order_acquire) - 1) +
           " is still open; the steps of one window do not overlap: end each step before "
           "beginning the next (one `auto step = window.step();` per loop iteration; threads "
           "that serve requests at the same time need a window each)");
    return;
  }
  std::int64_t const n = next_step_.fetch_add(1, std::memory_order_acq_rel);
  s.number_ = n;
  s.thread_ = std::this_thread::get_id();
#if NSIGHTKIT_ENABLED
  if (!off_ && !closed_.load(std::memory_order_acquire)) take_request(n);
#endif
  s.phase_ = closed_.load(std::memory_order_acquire) ? CapturePhase::off : phase_of(n);
  s.open_ = true;
#if NSIGHTKIT_ENABLED
  detail::capture_state.last_step.store(n, std::memory_order_release);
  if (s.phase_ == CapturePhase::warmup && !armed_.load(std::memory_order_acquire)) arm();
  if (s.phase_ == CapturePhase::active && starts_at(n)) start_capture(n);
  static constexpr Attributes step_attributes{detail::step_category()};
  s.range_ = detail::emit_formatted<DefaultDomain, detail::Op::push>(
      step_attributes, fmt::string_view{"step {}"}, n);
#endif
}

NSIGHTKIT_DETAIL_MEMBER void CaptureWindow::misuse(std::string const& message) {
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  throw std::logic_error(message);
#else
  std::fprintf(stderr, "nsightkit: %s; this step is ignored\n", message.c_str());
#endif
}

NSIGHTKIT_DETAIL_MEMBER void CaptureWindow::on_start(CaptureCallback f) {
#if NSIGHTKIT_ENABLED
  if (f) on_start_.push_back(std::move(f));
#else
  (void)f;
#endif
}

NSIGHTKIT_DETAIL_MEMBER void CaptureWindow::on_stop(CaptureCallback f) {
#if NSIGHTKIT_ENABLED
  if (f) on_stop_.push_back(std::move(f));
#else
  (void)f;
#endif
}

NSIGHTKIT_DETAIL_MEMBER CaptureStep::CaptureStep(CaptureWindow& window) : window_{&window} {
  window.begin_step(*this);
  if (!open_) window_ = nullptr;  // rejected without exceptions: an inert step
}

NSIGHTKIT_DETAIL_MEMBER void CaptureStep::end() noexcept {
  if (!open_) return;
  open_ = false;
  detail::Emitted range = std::exchange(range_, detail::Emitted{});
  if (thread_ == std::this_thread::get_id()) {
    detail::end_push<DefaultDomain>(range);
  } else {
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) {
      std::fprintf(stderr,
                   "nsightkit: CaptureStep %lld ended on a thread other than the one that began "
                   "it; its range is pushed on that thread and stays open there (end each step on "
                   "the thread that began it)\n",
                   static_cast<long long>(number_));
    }
  }
  if (window_ != nullptr) window_->end_step(*this);
}

NSIGHTKIT_DETAIL_END_NAMESPACE
