// Internal: GPU work as the report aggregates it — one activity (a kernel, copy, memset, device
// allocation or free, as CUPTI records it), the launch it came from, and the per-path sums. Pure
// C++: the attribution is tested on the CPU with synthetic activities.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/report/stats.hpp>
#include <nsightkit/report_types.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#if defined(__GNUC__) || defined(__clang__)
#include <cxxabi.h>

#include <cstdlib>
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// The demangled form of a C++ symbol, or `name` itself.
inline std::string demangle(char const* name) {
  if (name == nullptr) return "?";
#if defined(__GNUC__) || defined(__clang__)
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (d != nullptr) {
    std::string out = status == 0 ? std::string{d} : std::string{name};
    std::free(d);
    return out;
  }
#endif
  return name;
}

/// Direction of a copy.
enum class CopyKind : std::uint8_t { h2d, d2h, d2d, other };

/// One piece of GPU work, or a device allocation/free, in the report's clock.
struct GpuActivity {
  enum class Kind : std::uint8_t { kernel, memcpy, memset, alloc, free };
  Kind kind{Kind::kernel};
  CopyKind copy{CopyKind::other};  // memcpy only
  bool pageable{false};            // memcpy/memset touching pageable host memory
  std::uint32_t correlation{0};    // the launch call's correlation id (0: none)
  std::uint32_t device{0};
  std::uint32_t stream{0};
  std::int64_t start{0};  // alloc/free: the time of the operation (start == end)
  std::int64_t end{0};
  std::uint64_t bytes{0};
  std::uint64_t address{0};     // alloc/free
  std::uint32_t name{0};        // kernel: interned name id
  std::uint64_t graph_node{0};  // CUPTI's id of the graph node it ran as (0: not a graph's)
  bool legacy{false};           // ran on the legacy default stream
  [[nodiscard]] bool interval() const noexcept {
    return kind == Kind::kernel || kind == Kind::memcpy || kind == Kind::memset;
  }
};

/// Launch::thread of a launch made outside the capture window in captured mode (in warm-up
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

/// Sums of copies or memsets.
struct CopyAcc {
  std::uint64_t count{0};
  std::uint64_t bytes{0};
  std::int64_t ns{0};
  std::uint64_t pageable{0};
  void add(GpuActivity const& a) noexcept {
    ++count;
    bytes += a.bytes;
    ns += a.end - a.start;
    if (a.pageable) ++pageable;
  }
  void merge(CopyAcc const& o) noexcept {
    count += o.count;
    bytes += o.bytes;
    ns += o.ns;
    pageable += o.pageable;
  }
  [[nodiscard]] CopyStats stats() const { return CopyStats{count, bytes, ns, pageable}; }
};

/// Per-path sums of GPU work (see GpuWorkStats for what each means).
struct GpuWork {
  std::uint64_t kernels{0};
  std::uint64_t self_kernels{0};
  std::int64_t kernel_ns{0};
  std::int64_t busy_ns{0};
  std::int64_t self_busy_ns{0};
  std::int64_t span_ns{0};
  std::uint64_t calls{0};
  Distribution latency;
  CopyAcc copies[4];  // by CopyKind
  CopyAcc memsets;
  std::vector<std::uint64_t> streams;  // (device << 32 | stream), sorted, at most max_streams
  struct Kernel {
    std::uint32_t name;
    std::uint64_t count;
    std::int64_t ns;
  };
  std::vector<Kernel> by_name;  // at most max_kernel_names; the rest under name 0
  std::uint64_t allocations{0};
  std::uint64_t allocated_bytes{0};
  std::uint64_t freed_bytes{0};
  std::uint64_t live_bytes{0};
  std::uint64_t peak_bytes{0};
  std::uint64_t legacy{0};             // work on the legacy default stream
  std::uint64_t delegated_kernels{0};  // kernels launched for the range by another thread
  std::int64_t delegated_kernel_ns{0};
  struct Sync {
    std::uint32_t api;  // interned name
    std::uint64_t count;
    std::int64_t ns;
  };
  std::vector<Sync> syncs;  // host-blocking calls of the range itself, by API

  void add_sync(std::uint32_t api, std::int64_t ns) {
    for (Sync& x : syncs) {
      if (x.api == api) {
        ++x.count;
        x.ns += ns;
        return;
      }
    }
    if (syncs.size() < 64) syncs.push_back(Sync{api, 1, ns});
  }

  static constexpr std::size_t max_streams = 64;
  static constexpr std::size_t max_kernel_names = 256;

  [[nodiscard]] bool empty() const noexcept {
    return kernels == 0 && calls == 0 && memsets.count == 0 && copies[0].count == 0 &&
           copies[1].count == 0 && copies[2].count == 0 && copies[3].count == 0 &&
           allocations == 0 && syncs.empty();
  }

  void add_stream(std::uint32_t device, std::uint32_t stream) {
    std::uint64_t const key = (std::uint64_t{device} << 32) | stream;
    auto it = std::lower_bound(streams.begin(), streams.end(), key);
    if (it != streams.end() && *it == key) return;
    if (streams.size() < max_streams) streams.insert(it, key);
  }

  void add_kernel(std::uint32_t name, std::int64_t ns) {
    for (Kernel& k : by_name) {
      if (k.name == name) {
        ++k.count;
        k.ns += ns;
        return;
      }
    }
    if (by_name.size() < max_kernel_names) {
      by_name.push_back(Kernel{name, 1, ns});
      return;
    }
    add_kernel(0, ns);  // name 0: "(other kernels)"
  }

  /// Adds `o` (another thread's row of the same path, or a part of a call).
  void merge(GpuWork const& o) {
    kernels += o.kernels;
    self_kernels += o.self_kernels;
    kernel_ns += o.kernel_ns;
    busy_ns += o.busy_ns;
    self_busy_ns += o.self_busy_ns;
    span_ns += o.span_ns;
    calls += o.calls;
    latency.merge(o.latency);
    for (int i = 0; i < 4; ++i) copies[i].merge(o.copies[i]);
    memsets.merge(o.memsets);
    for (std::uint64_t s : o.streams)
      add_stream(static_cast<std::uint32_t>(s >> 32), static_cast<std::uint32_t>(s));
    for (Kernel const& k : o.by_name) {
      bool found = false;
      for (Kernel& mine : by_name) {
        if (mine.name == k.name) {
          mine.count += k.count;
          mine.ns += k.ns;
          found = true;
          break;
        }
      }
      if (!found) by_name.push_back(k);
    }
    allocations += o.allocations;
    allocated_bytes += o.allocated_bytes;
    freed_bytes += o.freed_bytes;
    live_bytes += o.live_bytes;
    peak_bytes += o.peak_bytes;  // threads' peaks need not coincide: an upper bound when merged
    legacy += o.legacy;
    delegated_kernels += o.delegated_kernels;
    delegated_kernel_ns += o.delegated_kernel_ns;
    for (Sync const& x : o.syncs) {
      bool found = false;
      for (Sync& mine : syncs) {
        if (mine.api == x.api) {
          mine.count += x.count;
          mine.ns += x.ns;
          found = true;
          break;
        }
      }
      if (!found && syncs.size() < 64) syncs.push_back(x);
    }
  }
};

/// Length of the union of intervals [start, end) — sorted in place by start — counting only
/// what lies after `frontier` (time already counted by an earlier part of the same call). Returns
/// the length; `frontier` becomes the end of the union.
inline std::int64_t union_length(std::vector<std::pair<std::int64_t, std::int64_t>>& v,
                                 std::int64_t& frontier) {
  std::sort(v.begin(), v.end());
  std::int64_t total = 0;
  for (auto const& [s0, e] : v) {
    std::int64_t const s = std::max(s0, frontier);
    if (e <= s) continue;
    total += e - s;
    frontier = e;
  }
  return total;
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
