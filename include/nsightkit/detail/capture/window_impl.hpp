// Internal: the cold paths of CaptureWindow (capture.hpp) — reading NSIGHTKIT_CAPTURE, starting
// and stopping a capture, delivering diagnostics and callbacks. Header-only, capture.hpp includes
// them; in the compiled mode (detail/compiled.hpp) src/nsightkit.cpp defines them once.
#pragma once

#include <nsightkit/capture.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/detail/capture/cuda.hpp>
#include <nsightkit/detail/capture/registry.hpp>
#include <nsightkit/detail/capture_state.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/detail/cuda_driver.hpp>
#include <nsightkit/detail/process.hpp>
#include <nsightkit/detail/text.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#if !NSIGHTKIT_ENABLED
#error                                                                                             \
    "nsightkit/detail/capture/window_impl.hpp must not be included when NSIGHTKIT_DISABLE is defined"
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

struct CaptureWindow::Edge {
  bool started{false};
  bool stopped{false};
  bool first_active{false};  // the process had no active window before this one started
  bool last_active{false};   // no window of the process is active after this one stopped
  CaptureEvent event{};
  std::vector<std::string> messages{};
};

NSIGHTKIT_DETAIL_MEMBER void CaptureWindow::construct(bool from_code, CaptureOptions&& options) {
  check_schedule(from_code);
  options_ = std::move(options);
  read_environment();
  profiler_ =
      options_.profiler != nullptr ? options_.profiler : &detail::capture::driver_profiler();
  driver_profiler_ = profiler_ == &detail::capture::driver_profiler();
  use_profiler_api_ = has_backend(options_.backends, CaptureBackend::cuda_profiler);
  use_nvtx_ = has_backend(options_.backends, CaptureBackend::nvtx_range) &&
              options_.nvtx_range_name != nullptr;
  if (!use_profiler_api_ && !options_.synchronize_before_stop) profiler_ = nullptr;
  link_.owner = this;
  link_.close_for_exit = &CaptureWindow::close_for_exit;
  requests_seen_ = detail::capture_state.requests.load(std::memory_order_acquire);
  if (!off_) {
    counted_.store(true, std::memory_order_release);
    detail::capture_state.windows.fetch_add(1, std::memory_order_acq_rel);
  }
}

NSIGHTKIT_DETAIL_MEMBER void CaptureWindow::read_environment() {
  detail::check_environment_once();  // a misspelt NSIGHTKIT_CAPTURE is named, not ignored
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

NSIGHTKIT_DETAIL_MEMBER void CaptureWindow::report(std::string const& message) const noexcept {
  NSIGHTKIT_DETAIL_TRY {
    if (options_.diagnostics) {
      options_.diagnostics(message);
    } else {
      std::fprintf(stderr, "nsightkit: %s\n", message.c_str());
    }
  }
  NSIGHTKIT_DETAIL_CATCH(...) { std::fprintf(stderr, "nsightkit: %s\n", message.c_str()); }
}

NSIGHTKIT_DETAIL_MEMBER std::string CaptureWindow::thrown(std::string const& prefix,
                                                          char const* unknown) noexcept {
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  try {
    throw;
  } catch (std::exception const& e) {
    try {
      return prefix + e.what();
    } catch (...) {
      return "?";
    }
  } catch (...) {
    return unknown;
  }
#else
  (void)prefix;
  return unknown;
#endif
}

template <class F>
std::string CaptureWindow::call_backend(F&& f) noexcept {
  NSIGHTKIT_DETAIL_TRY { return f(); }
  NSIGHTKIT_DETAIL_CATCH(...) {
    return thrown("the profiler backend threw: ",
                  "the profiler backend threw an unknown exception");
  }
  return {};
}

NSIGHTKIT_DETAIL_MEMBER void CaptureWindow::drop_profiler_without_driver(Edge& edge) noexcept {
  if (detail::cuda_driver::api().unavailable == nullptr) return;
  profiler_ = nullptr;
  NSIGHTKIT_DETAIL_TRY {
    std::string why = detail::capture::describe_no_driver();
    why += ": capture continues without the profiler";
    edge.messages.push_back("CaptureWindow: " + why);
  }
  NSIGHTKIT_DETAIL_CATCH(...) {}  // no memory for the message: the window goes on without it
}

NSIGHTKIT_DETAIL_MEMBER void CaptureWindow::add_message(Edge& edge, std::string const& what,
                                                        char const* consequence) noexcept {
  NSIGHTKIT_DETAIL_TRY { edge.messages.push_back("CaptureWindow: " + what + "; " + consequence); }
  NSIGHTKIT_DETAIL_CATCH(...) {}  // no memory for the message: the window goes on without it
}

NSIGHTKIT_DETAIL_MEMBER void CaptureWindow::start_capture(std::int64_t first) noexcept {
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
    window_requested_ = in_request(first);
    capturing_.store(true, std::memory_order_seq_cst);  // seq_cst: see below
    edge.first_active =
        detail::capture_state.active_windows.fetch_add(1, std::memory_order_acq_rel) == 0;
    // Disarmed after the count above, so a reader never sees the window neither armed nor active.
    if (armed_.exchange(false, std::memory_order_acq_rel)) {
      detail::capture_state.armed_windows.fetch_sub(1, std::memory_order_acq_rel);
    }
    detail::capture::link(link_);
    detail::capture::install_exit_handler();
    std::int64_t const last = first > std::numeric_limits<std::int64_t>::max() - schedule_.active
                                  ? std::numeric_limits<std::int64_t>::max()
                                  : first + schedule_.active - 1;
    edge.event = window_requested_
                     ? CaptureEvent{first, last, requested_windows_++, false, true}
                     : CaptureEvent{first, last, schedule_.cycle_of(first), false, false};
    edge.started = true;
  }
  deliver(edge);
  // close() from another thread stores closed_, then reads capturing_, without the lock: one of
  // the two sees the other's store (both seq_cst), so a closed window never stays capturing.
  if (closed_.load(std::memory_order_seq_cst)) stop_capture(first, false);
}

NSIGHTKIT_DETAIL_MEMBER void CaptureWindow::stop_capture(std::int64_t last,
                                                         bool complete) noexcept {
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
    edge.event =
        CaptureEvent{window_first_, last < window_first_ ? window_first_ : last,
                     window_requested_ ? requested_windows_ - 1 : schedule_.cycle_of(window_first_),
                     complete, window_requested_};
    // Counted before the edge is told, so the report sees a requested capture end.
    if (window_requested_) {
      detail::capture_state.requested_stops.fetch_add(1, std::memory_order_acq_rel);
    }
    edge.stopped = true;
  }
  deliver(edge);
}

NSIGHTKIT_DETAIL_MEMBER void CaptureWindow::arm() noexcept {
  {
    std::lock_guard<std::mutex> lock{detail::capture::registry.mutex};
    if (closed_.load(std::memory_order_acquire) || capturing_.load(std::memory_order_acquire) ||
        armed_.load(std::memory_order_acquire)) {
      return;
    }
    armed_.store(true, std::memory_order_seq_cst);
    detail::capture_state.armed_windows.fetch_add(1, std::memory_order_acq_rel);
  }
  // As in start_capture: close() stores closed_, then reads armed_; one of the two sees the other.
  if (closed_.load(std::memory_order_seq_cst)) {
    disarm();
    return;
  }
  detail::capture_notify(detail::CaptureEdge::armed);
}

NSIGHTKIT_DETAIL_MEMBER void CaptureWindow::disarm() noexcept {
  {
    std::lock_guard<std::mutex> lock{detail::capture::registry.mutex};
    if (!armed_.exchange(false, std::memory_order_seq_cst)) return;
    detail::capture_state.armed_windows.fetch_sub(1, std::memory_order_acq_rel);
  }
  detail::capture_notify(detail::CaptureEdge::disarmed);
}

NSIGHTKIT_DETAIL_MEMBER void CaptureWindow::deliver(Edge const& edge) noexcept {
  for (auto const& m : edge.messages) report(m);
  if (edge.first_active) detail::capture_notify(detail::CaptureEdge::started);
  if (edge.last_active) detail::capture_notify(detail::CaptureEdge::stopped);
  auto const& callbacks = edge.started ? on_start_ : on_stop_;
  if (!edge.started && !edge.stopped) return;
  for (auto const& f : callbacks) {
    NSIGHTKIT_DETAIL_TRY { f(edge.event); }
    NSIGHTKIT_DETAIL_CATCH(...) {
      std::string const who = std::string{"CaptureWindow: an "} +
                              (edge.started ? "on_start" : "on_stop") + " callback threw";
      report(thrown(who + ": ", who.c_str()) + "; ignored");
    }
  }
}

NSIGHTKIT_DETAIL_END_NAMESPACE
