// Internal: the seam between the report and whatever measures GPU time (a "GPU source"), and the
// GPU work a source hands the report per path.
//
// The report records CPU ranges itself; GPU time comes from one source, chosen when the report is
// enabled: CUDA events on the stream a thread declares current (events_source.hpp), or CUPTI's
// activity records (detail/cupti/source.hpp, the nsightkit::cupti component). The report calls a
// source at these moments, always with the state it needs and never on a hot path that nothing
// measures:
//
//   begin(frame)  a counted range begins on the calling thread     (under the thread's lock)
//   end(frame)    it ends                                          (under the thread's lock)
//   poll()        cheap progress after a range ends                (under the thread's lock)
//   drop_open()   the thread's open ranges are forgotten           (under the thread's lock)
//   flush()       complete all work ended so far: snapshot, write  (no lock held; may block)
//   shutdown()    the process is exiting or was forked: no more GPU calls from now on
//
// A source keeps its per-thread data in a ThreadGpu of its slot; results go into the thread's path
// nodes (Node::gpu), per-path GpuWork (copy_work) and GPU trace slices (ThreadData::gpu_trace),
// which the snapshot and the trace read without knowing which source wrote them.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/report/current_stream.hpp>
#include <nsightkit/detail/report/stats.hpp>
#include <nsightkit/report_types.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

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

struct State;
struct ThreadData;
struct Frame;

/// A source's data for one recording thread, owned by the thread's ThreadData in the source's
/// slot (ThreadData::gpu[slot]); the source creates it on the thread's first range it sees.
class ThreadGpu {
 public:
  virtual ~ThreadGpu() = default;
};

/// Slots of ThreadData::gpu: one per kind of source, so switching sources keeps each one's data.
enum GpuSlot : std::size_t { events_slot = 0, cupti_slot = 1, gpu_slots = 2 };

/// See the file comment. Implementations must not throw out of these calls except std::bad_alloc
/// (the report turns that into dropping the thread's open ranges, as for its own allocations).
class GpuSource {
 public:
  virtual ~GpuSource() = default;
  /// Short name printed in every output ("events", "cupti").
  [[nodiscard]] virtual char const* name() const noexcept = 0;
  /// Why this source cannot measure here ("" when it can); the report then uses another.
  [[nodiscard]] virtual std::string unavailable() { return {}; }
  /// Starts (true) or stops (false) collecting: the report uses this source from now on, or no
  /// longer. Collection costs only while on.
  virtual void activate(bool on) { (void)on; }
  /// A counted, non-step range begins; `ctx` is the thread's current stream.
  virtual void begin(State& s, ThreadData& td, Frame& f, GpuContext const& ctx) = 0;
  /// The range `f` ends (only called for frames whose begin() set Frame::gpu).
  virtual void end(State& s, ThreadData& td, Frame const& f) = 0;
  /// The thread's open frames are dropped without ending (reset(), enable(), out of memory):
  /// release what begin() took for them.
  virtual void drop_open(State& s, ThreadData& td) = 0;
  /// Cheap progress on the recording thread after a pop.
  virtual void poll(State& s, ThreadData& td) = 0;
  /// Completes everything ended so far, on every thread. May wait for the GPU.
  virtual void flush(State& s) = 0;
  /// No GPU call may be made from now on (the CUDA runtime unloads, or this is a forked child);
  /// pending work is dropped.
  virtual void shutdown(State& s) noexcept = 0;
  /// Report::reset(): counters and totals start again.
  virtual void reset_counters() noexcept {}
  /// Its bookkeeping (ranges timed, skipped, pending, why it stopped) for a snapshot.
  virtual void fill(State& s, GpuTimingStats& out) = 0;
  /// The GPU work of each of the thread's path nodes (`nodes` is sized to the thread's node
  /// count), for sources that measure work rather than spans.
  virtual void copy_work(State& s, ThreadData& td, std::vector<GpuWork>& nodes) {
    (void)s;
    (void)td;
    (void)nodes;
  }
  /// The stream `stream` (a cudaStream_t or CUstream) as this source's records name it: device
  /// << 32 | stream id. False when it cannot be told.
  virtual bool stream_key(void* stream, std::uint64_t& key) {
    (void)stream;
    (void)key;
    return false;
  }
  /// The printable name of kernel name id `id` (see GpuWork::by_name).
  [[nodiscard]] virtual std::string kernel_name(std::uint32_t id) const {
    (void)id;
    return "?";
  }
};

/// Set by <nsightkit/cupti.hpp> (the nsightkit::cupti component) during static initialisation:
/// returns the process's CUPTI source. Null where the component is not linked.
using SourceProvider = GpuSource* (*)();
NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<SourceProvider> cupti_provider{nullptr};

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
