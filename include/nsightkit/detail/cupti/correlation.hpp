// Internal: correlation id -> the launch it came from — how the CUPTI source joins a piece of GPU
// work to the range that launched it, written by the launching thread, read where records arrive.
#pragma once

#include <nsightkit/config.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// Launch::thread of a launch made outside the capture window under window-only (in warm-up
/// steps, when collection already runs): its work is not counted anywhere.
inline constexpr std::uint32_t outside_window = 0xFFFFFFFEu;

/// Who launched a piece of work: the thread (ThreadData::index), its innermost range's node, the
/// thread's launch sequence number, the report generation, and when the launch call was entered.
struct Launch {
  std::uint32_t thread{0xFFFFFFFFu};
  std::uint32_t node{0xFFFFFFFFu};
  std::uint32_t seq{0};
  std::uint32_t generation{0};
  std::int64_t entered{0};
  [[nodiscard]] bool known() const noexcept { return thread != 0xFFFFFFFFu; }
};

/**
 * Correlation id -> Launch, written by the launching thread in the launch callback, read by the
 * thread that receives the activity records. Direct-mapped and lock-free: a launch call costs a
 * handful of relaxed stores. A slot is overwritten by the launch `capacity` ids later; a record
 * whose launch was overwritten before it arrived is "unattributed" (counted, never misattributed:
 * the slot's id is checked, and a torn read is detected by reading the id twice).
 */
class CorrelationTable {
 public:
  explicit CorrelationTable(std::size_t capacity_log2 = 18)
      : mask_{(std::size_t{1} << capacity_log2) - 1}, slots_{new Slot[mask_ + 1]} {}

  void put(std::uint32_t correlation, Launch const& l) noexcept {
    Slot& s = slots_[correlation & mask_];
    s.id.store(0, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    s.thread.store(l.thread, std::memory_order_relaxed);
    s.node.store(l.node, std::memory_order_relaxed);
    s.seq.store(l.seq, std::memory_order_relaxed);
    s.generation.store(l.generation, std::memory_order_relaxed);
    s.entered.store(l.entered, std::memory_order_relaxed);
    s.id.store(correlation, std::memory_order_release);
  }

  /// The launch of `correlation`, or a Launch that is not known().
  [[nodiscard]] Launch get(std::uint32_t correlation) const noexcept {
    if (correlation == 0) return {};
    Slot const& s = slots_[correlation & mask_];
    if (s.id.load(std::memory_order_acquire) != correlation) return {};
    Launch l;
    l.thread = s.thread.load(std::memory_order_relaxed);
    l.node = s.node.load(std::memory_order_relaxed);
    l.seq = s.seq.load(std::memory_order_relaxed);
    l.generation = s.generation.load(std::memory_order_relaxed);
    l.entered = s.entered.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s.id.load(std::memory_order_relaxed) != correlation) return {};  // overwritten meanwhile
    return l;
  }

  [[nodiscard]] std::size_t capacity() const noexcept { return mask_ + 1; }

 private:
  struct Slot {
    std::atomic<std::uint32_t> id{0};
    std::atomic<std::uint32_t> thread{0};
    std::atomic<std::uint32_t> node{0};
    std::atomic<std::uint32_t> seq{0};
    std::atomic<std::uint32_t> generation{0};
    std::atomic<std::int64_t> entered{0};
  };
  std::size_t mask_;
  std::unique_ptr<Slot[]> slots_;
};

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
