// Internal: the seam between the report and whatever measures GPU time (a "GPU source").
//
// The report records CPU ranges itself; GPU time comes from one source, chosen when the report is
// enabled: CUDA events on the stream a thread declares current (gpu_events.hpp), or CUPTI's
// activity records (gpu_cupti.hpp, the nsightkit::cupti component). The report calls a source
// at these moments, always with the state it needs and never on a hot path that nothing
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
// nodes (Node::gpu) and GPU trace slices (ThreadData::gpu_trace), which the snapshot and the trace
// read without knowing which source wrote them.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/report/current_stream.hpp>
#include <nsightkit/detail/report/gpu_work.hpp>
#include <nsightkit/report_types.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

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
