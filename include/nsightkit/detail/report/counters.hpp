// Internal: counter tracks for the trace — a value over time ("pinned pool bytes in use",
// "prefetch queue depth", ...), drawn by Perfetto and chrome://tracing as a graph ("ph": "C").
//
// A feature that has such a value calls counter_sample(name, value) whenever it changes; the
// report keeps the samples while it records a trace and writes one counter track per name. When
// the report records no trace the call is one atomic load. Samples are kept in a bounded buffer:
// past `max_counter_samples` the oldest half is dropped (counted, and said in the trace), so a
// long run keeps its latest values.
//
// `name` must outlive the process's report (a string literal): samples keep the pointer.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/counter.hpp>
#include <nsightkit/detail/report/state.hpp>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// Samples kept at most (24 bytes each); past it the oldest half is dropped.
inline constexpr std::size_t max_counter_samples = std::size_t{1} << 20;

struct CounterSample {
  std::int64_t t;
  char const* name;
  double value;
};

struct Counters {
  std::mutex mutex;
  std::vector<CounterSample> samples;
  std::uint64_t dropped{0};
};

/// The process's counter samples (one per process, as the report's state).
NSIGHTKIT_DETAIL_VISIBLE inline Counters counters;

/// Records that counter `name` (a string literal) has `value` now. Never throws.
inline void counter_sample(char const* name, double value) noexcept {
  State* s = state();
  if (s == nullptr || !s->trace.load(std::memory_order_relaxed)) return;
  NSIGHTKIT_DETAIL_TRY {
    std::int64_t const t = s->now();
    auto const wake = s->trace_wake.load(std::memory_order_acquire);
    std::lock_guard<std::mutex> lock{counters.mutex};
    if (wake != nullptr) {
      // Streamed (trace/stream.hpp): held like the threads' events, until the next piece.
      if (counters.samples.size() >= s->max_trace_events.load(std::memory_order_relaxed)) {
        ++counters.dropped;
        return;
      }
      counters.samples.push_back(CounterSample{t, name, value});
      if (counters.samples.size() == stream_batch(*s)) wake();
      return;
    }
    if (counters.samples.size() >= max_counter_samples) {
      std::size_t const half = counters.samples.size() / 2;
      counters.samples.erase(counters.samples.begin(),
                             counters.samples.begin() + static_cast<std::ptrdiff_t>(half));
      counters.dropped += half;
    }
    counters.samples.push_back(CounterSample{t, name, value});
  }
  NSIGHTKIT_DETAIL_CATCH(...) {}
}

/// Forgets every sample (Report::reset(), a forked child).
inline void clear_counters() noexcept {
  std::lock_guard<std::mutex> lock{counters.mutex};
  counters.samples.clear();
  counters.dropped = 0;
}

/// A copy of the samples and how many were dropped, for the trace writer.
inline std::vector<CounterSample> copy_counters(std::uint64_t& dropped) {
  std::lock_guard<std::mutex> lock{counters.mutex};
  dropped = counters.dropped;
  return counters.samples;
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
