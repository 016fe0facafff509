// Internal: the seam through which a feature reports a value over time (pinned bytes in use,
// prefetched batches waiting) to whatever draws counter tracks — the report's trace — without
// depending on it. The report installs its sink when it is enabled; until then a call is one
// atomic load.
#pragma once

#include <nsightkit/config.hpp>

#include <atomic>
#include <cstdint>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {

/// Receives counter `name` (a string literal: it is kept) with its value now. Never throws.
using CounterSink = void (*)(char const* name, double value) noexcept;

/// The process's sink (one per process, as the report it belongs to).
NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<CounterSink> counter_sink{nullptr};

/// Reports that counter `name` (a string literal) has `value` now.
inline void counter(char const* name, double value) noexcept {
  if (CounterSink const sink = counter_sink.load(std::memory_order_acquire)) sink(name, value);
}

/// A process-wide total several objects add to (every pinned pool's bytes in use, every
/// prefetcher's waiting batches): each change is reported as the new total.
class CounterTotal {
 public:
  explicit constexpr CounterTotal(char const* name) noexcept : name_{name} {}
  void add(std::int64_t delta) noexcept {
    if (delta == 0) return;
    std::int64_t const now = total_.fetch_add(delta, std::memory_order_relaxed) + delta;
    counter(name_, static_cast<double>(now));
  }
  [[nodiscard]] std::int64_t value() const noexcept {
    return total_.load(std::memory_order_relaxed);
  }

 private:
  char const* name_;
  std::atomic<std::int64_t> total_{0};
};

/// Bytes in use in every PinnedMemoryPool of the process.
NSIGHTKIT_DETAIL_VISIBLE inline CounterTotal pinned_bytes_in_use{"pinned pool bytes in use"};
/// Batches every StreamPrefetcher of the process has copied (or is copying) and not yet handed
/// to its consumer.
NSIGHTKIT_DETAIL_VISIBLE inline CounterTotal prefetch_batches_waiting{"prefetch batches waiting"};

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
