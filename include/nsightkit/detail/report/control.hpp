// Internal: the report's controls once it exists — disable, is_enabled, the options in force, and
// reset (forgetting what was recorded).
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/report/counters.hpp>
#include <nsightkit/detail/report/events_source.hpp>
#include <nsightkit/detail/report/gpu_source.hpp>
#include <nsightkit/detail/report/state.hpp>
#include <nsightkit/detail/report/trace/stream.hpp>
#include <nsightkit/detail/sinks.hpp>
#include <nsightkit/report_types.hpp>

#include <atomic>
#include <mutex>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// Makes every thread drop its open frames at its next range event. Under s.mutex.
inline void bump_generations(State& s) noexcept {
  for (auto const& t : s.threads) {
    SpinGuard lock{t->lock};
    ++t->generation;
  }
}

/// Forgets what was recorded (Report::reset()).
inline void reset_data(State& s) noexcept {
  std::lock_guard<std::mutex> lock{s.mutex};
  s.origin.store(s.now(), std::memory_order_relaxed);
  for (auto const& t : s.threads) {
    SpinGuard tl{t->lock};
    ++t->generation;  // pending GPU work of the old generation is dropped when it resolves
    t->clear_data();
  }
  {
    std::lock_guard<std::mutex> se{s.se_mutex};
    s.se_open.clear();
    s.se_stats.clear();
    s.se_index.clear();
    s.se_trace.clear();
    s.se_over_limit = 0;
    s.se_dropped = 0;
  }
  if (EventsSource* ev = events_source_ptr.load(std::memory_order_acquire)) ev->reset_counters();
  clear_counters();
  if (GpuSource* src = s.source.load(std::memory_order_acquire)) src->reset_counters();
}

inline void disable() noexcept {
  State* s = state();
  if (s == nullptr) return;
  std::lock_guard<std::mutex> lock{s->mutex};
  if (!s->enabled) return;
  remove_sink(&s->sink);
  s->enabled = false;
  s->recording.store(false, std::memory_order_release);
  // Collection stops; what was measured stays (the source is kept for snapshots).
  if (GpuSource* src = s->source.load(std::memory_order_acquire)) {
    NSIGHTKIT_DETAIL_TRY { src->activate(false); }
    NSIGHTKIT_DETAIL_CATCH(...) {}
  }
}

inline bool is_enabled() noexcept {
  State* s = state();
  if (s == nullptr) return false;
  std::lock_guard<std::mutex> lock{s->mutex};
  return s->enabled;
}

inline ReportOptions options() {
  State* s = state();
  if (s == nullptr) return ReportOptions{};
  std::lock_guard<std::mutex> lock{s->mutex};
  return s->options;
}

inline void reset() noexcept {
  State* s = state();
  if (s == nullptr) return;
  TraceStream* const stream = TraceStream::existing();
  std::unique_lock<std::mutex> streaming;  // first in the lock order
  if (stream != nullptr) streaming = std::unique_lock<std::mutex>{stream->mutex()};
  reset_data(*s);
  if (stream != nullptr) {
    NSIGHTKIT_DETAIL_TRY { stream->restart_locked(*s); }
    NSIGHTKIT_DETAIL_CATCH(...) {}
  }
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
