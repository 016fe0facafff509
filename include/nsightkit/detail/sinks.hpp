// Internal: nsightkit's own in-process consumers of range events (the report, tests).
//
// A sink sees every nsightkit range, mark and thread name of the process, whether or not an
// NVTX tool is attached. While at least one sink is registered, formatted range names are
// formatted even when no NVTX tool listens, because the sink needs them.
#pragma once

#include <nsightkit/attributes.hpp>
#include <nsightkit/config.hpp>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string_view>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {

/// What a sink learns when a range begins or a mark is emitted.
struct RangeBegin {
  char const* domain;            ///< domain name; "" for NVTX's global domain
  std::string_view name;         ///< range name; valid only during the call
  Attributes const* attributes;  ///< never null
};

/// Interface of an in-process consumer. Calls come from the thread that emits the event and must
/// not throw; they may come concurrently from many threads.
class RangeSink {
 public:
  /// A push/pop range begins on the calling thread.
  virtual void on_push(RangeBegin const& begin) noexcept = 0;
  /// The innermost push/pop range of `domain` on the calling thread ends. A sink added while a
  /// range was open may see pops whose push it never saw; it must ignore them.
  virtual void on_pop(char const* domain) noexcept = 0;
  /// A start/end range begins; `id` is unique in the process.
  virtual void on_start(std::uint64_t id, RangeBegin const& begin) noexcept {
    (void)id;
    (void)begin;
  }
  /// The start/end range `id` ends (possibly on another thread).
  virtual void on_end(std::uint64_t id) noexcept { (void)id; }
  /// An instantaneous mark.
  virtual void on_mark(RangeBegin const& begin) noexcept { (void)begin; }
  /// The calling thread was named.
  virtual void on_thread_name(std::string_view name) noexcept { (void)name; }
  /// A CUDA stream (a cudaStream_t or CUstream) was named.
  virtual void on_stream_name(void const* stream, std::string_view name) noexcept {
    (void)stream;
    (void)name;
  }

 protected:
  RangeSink() = default;
  RangeSink(RangeSink const&) = default;
  RangeSink& operator=(RangeSink const&) = default;
  ~RangeSink() = default;
};

/// Process-wide table of sinks. Constant-initialised, so it is usable from static initialisers.
struct SinkRegistry {
  static constexpr int capacity = 8;
  std::atomic<RangeSink*> slots[capacity]{};
  std::atomic<int> active{0};
  std::atomic<int> used{0};  // 1 + highest slot ever used: dispatch scans only that far
  std::atomic<std::uint64_t> next_range_id{1};
  std::mutex mutex;
};

/// The one registry of the process (default visibility: shared by every library that embeds
/// nsightkit and is linked or loaded globally).
NSIGHTKIT_DETAIL_VISIBLE inline SinkRegistry sink_registry{};

/// True while at least one sink is registered. One relaxed load: this is on the hot path.
inline bool sinks_active() noexcept {
  return sink_registry.active.load(std::memory_order_relaxed) != 0;
}

/// Registers `sink`. Returns false when the table is full or the sink is already registered.
inline bool add_sink(RangeSink* sink) noexcept {
  if (sink == nullptr) return false;
  std::lock_guard<std::mutex> lock{sink_registry.mutex};
  int free_slot = -1;
  for (int i = 0; i < SinkRegistry::capacity; ++i) {
    RangeSink* s = sink_registry.slots[i].load(std::memory_order_relaxed);
    if (s == sink) return false;
    if (s == nullptr && free_slot < 0) free_slot = i;
  }
  if (free_slot < 0) return false;
  sink_registry.slots[free_slot].store(sink, std::memory_order_release);
  if (sink_registry.used.load(std::memory_order_relaxed) < free_slot + 1) {
    sink_registry.used.store(free_slot + 1, std::memory_order_release);
  }
  sink_registry.active.fetch_add(1, std::memory_order_release);
  return true;
}

/// Unregisters `sink`. Events already being delivered on other threads may still reach it: the
/// caller keeps the sink alive until those threads are done (sinks are normally process-lived).
inline bool remove_sink(RangeSink* sink) noexcept {
  std::lock_guard<std::mutex> lock{sink_registry.mutex};
  for (auto& slot : sink_registry.slots) {
    if (slot.load(std::memory_order_relaxed) == sink) {
      slot.store(nullptr, std::memory_order_release);
      sink_registry.active.fetch_sub(1, std::memory_order_release);
      return true;
    }
  }
  return false;
}

/// Calls `f(sink)` for every registered sink.
template <class F>
inline void for_each_sink(F&& f) noexcept {
  int const used = sink_registry.used.load(std::memory_order_acquire);
  for (int i = 0; i < used; ++i) {
    if (RangeSink* s = sink_registry.slots[i].load(std::memory_order_acquire)) f(*s);
  }
}

/// True on a thread while the emit engine hands an event to NVTX that it also gives the sinks
/// itself: an NVTX tool that feeds a sink (the report as an NVTX tool) ignores such an event, so
/// nsightkit's own ranges are seen once whichever way they arrive. Default visibility: one flag
/// per thread for every library of the process that embeds nsightkit.
NSIGHTKIT_DETAIL_VISIBLE inline thread_local bool sinks_have_it = false;

/// A process-unique id for a start/end range seen by sinks.
inline std::uint64_t next_sink_range_id() noexcept {
  return sink_registry.next_range_id.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
