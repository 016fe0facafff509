// Internal: the report's data — the process-wide State, each recording thread's ThreadData, the
// path nodes ranges aggregate into, and the locks that guard them.
//
// Concurrency. Each recording thread owns a ThreadData (found through a thread_local pointer) with
// its own lock (owner_lock.hpp): the owner takes it once per push and once per pop, without a
// locked instruction; the reporting thread takes it only while copying that thread's data.
// Process-wide locks are taken only when a thread records for the first time, for start/end
// ranges, and by enable/disable.
// ThreadData and the State are never freed (a thread that exits keeps its data; ranges emitted
// from static destructors after the final report land in valid memory).
//
// Lock order: State::mutex, then State::se_mutex, then a ThreadData::lock, then a GPU source's own
// locks; State::stream_names_mutex is a leaf. The fork handlers (fork.hpp) take them all in
// that order.
#pragma once

#include <nsightkit/attributes.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/detail/report/clock.hpp>
#include <nsightkit/detail/report/gpu_source.hpp>
#include <nsightkit/detail/report/owner_lock.hpp>
#include <nsightkit/detail/report/stats.hpp>
#include <nsightkit/detail/report/step_series.hpp>
#include <nsightkit/detail/sinks.hpp>
#include <nsightkit/detail/thread.hpp>
#include <nsightkit/report_types.hpp>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

inline constexpr std::uint32_t no_node = 0xFFFFFFFFu;

/// One distinct path of a thread: (parent, domain, name).
struct Node {
  std::uint32_t parent{no_node};
  std::uint32_t depth{1};  // 1 for a range with no enclosing range
  std::uint64_t hash{0};
  char const* domain_key{nullptr};  // the pointer first seen, compared only (never dereferenced)
  std::string domain;
  std::string name;
  Distribution cpu;
  Distribution gpu;
  // Sibling prediction: programs repeat the same sequence of ranges, so the child that followed
  // this node last time (or the first child of this node) is checked before any hashing.
  std::uint32_t next_hint{no_node};
  std::uint32_t first_hint{no_node};
};

/// Open-addressing index from (parent, name) hash to node.
class PathIndex {
 public:
  template <class Eq>
  std::uint32_t find(std::uint64_t hash, Eq&& eq) const noexcept {
    if (slots_.empty()) return no_node;
    std::size_t const mask = slots_.size() - 1;
    for (std::size_t i = static_cast<std::size_t>(hash) & mask;; i = (i + 1) & mask) {
      Slot const& s = slots_[i];
      if (s.node == no_node) return no_node;
      if (s.hash == hash && eq(s.node)) return s.node;
    }
  }
  void insert(std::uint64_t hash, std::uint32_t node) {
    if ((used_ + 1) * 2 > slots_.size()) grow();
    place(hash, node);
    ++used_;
  }
  void clear() noexcept {
    slots_.clear();
    used_ = 0;
  }

 private:
  struct Slot {
    std::uint64_t hash;
    std::uint32_t node;
  };
  void place(std::uint64_t hash, std::uint32_t node) noexcept {
    std::size_t const mask = slots_.size() - 1;
    std::size_t i = static_cast<std::size_t>(hash) & mask;
    while (slots_[i].node != no_node) i = (i + 1) & mask;
    slots_[i] = Slot{hash, node};
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{0, no_node});
    for (Slot const& s : old) {
      if (s.node != no_node) place(s.hash, s.node);
    }
  }
  std::vector<Slot> slots_;
  std::size_t used_{0};
};

/// Hash of a path component under `parent`.
inline std::uint64_t path_hash(std::uint32_t parent, std::string_view name) noexcept {
  constexpr std::uint64_t k = 0x9E3779B97F4A7C15ull;
  std::uint64_t h = (std::uint64_t{parent} + 1) * 0xFF51AFD7ED558CCDull ^ name.size();
  std::size_t i = 0;
  for (; i + 8 <= name.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, name.data() + i, 8);
    h = (h ^ w) * k;
    h ^= h >> 31;
  }
  std::uint64_t tail = 0;
  for (std::size_t j = 0; i < name.size(); ++i, j += 8)
    tail |= std::uint64_t{static_cast<unsigned char>(name[i])} << j;
  h = (h ^ tail) * k;
  h ^= h >> 33;
  h *= 0xC4CEB9FE1A85EC53ull;
  h ^= h >> 33;
  return h;
}

/// Names of the rows that collect what a limit keeps out of the tree.
inline constexpr std::string_view other_paths_name = "(other paths)";
inline constexpr std::string_view deeper_ranges_name = "(deeper ranges)";
inline constexpr std::string_view other_marks_name = "(other marks)";
inline constexpr std::string_view other_start_end_name = "(other start/end ranges)";

/// A range open on the owning thread (trivially destructible: cheap to push and pop).
struct Frame {
  std::int64_t start{0};
  char const* domain{nullptr};
  std::uint32_t node{no_node};        // path node; a step frame carries its enclosing path node
  std::uint32_t last_child{no_node};  // path node of the latest child that ended (prediction)
  std::uint32_t gpu{no_node};         // the GPU source's handle for this frame, or no_node
  std::uint32_t label{no_node};       // index in ThreadData::open_labels (a step's name)
  std::uint32_t depth{0};             // path depth of `node` (0: no enclosing range)
  Payload payload{};                  // the range's payload, for its trace event
  bool counted{false};
  bool step{false};
  bool aggregated{true};  // false inside a range past the depth limit: counted, not aggregated
  bool limit{false};      // the first range past the depth limit: its node is "(deeper ranges)"
  bool ignored{false};    // a range of a domain left out (ReportOptions::domains): kept only so
                          // its pop finds it; not a path component, never counted
};

/// Events a thread buffers for the trace before the worker streaming it is woken.
inline constexpr std::size_t trace_stream_batch = std::size_t{1} << 14;

/// A completed range for the trace. `label` indexes ThreadData::labels for a step, and
/// ThreadData::payloads for a range with a payload; else no_node.
struct TraceEvent {
  std::int64_t start;
  std::int64_t dur;
  std::uint32_t node;
  std::uint32_t label;
};

struct Mark {
  std::string domain;
  std::string name;
  std::uint64_t count{0};
};

struct Instant {
  std::int64_t t;
  std::uint32_t mark;
};

/// A stretch of GPU time attributed to a path node of this thread, on one track (stream).
struct GpuSlice {
  std::int64_t start;
  std::int64_t dur;
  std::uint32_t node;
  std::uint32_t track;           // index in ThreadData::gpu_tracks
  std::int64_t launched{-1};     // when the launch call began on the thread (CUPTI), or -1
  std::uint32_t correlation{0};  // the launch's correlation id (CUPTI), or 0
  std::uint32_t label{no_node};  // ThreadData::gpu_labels: what ran (CUPTI); no_node: the range
};

/// What a GPU slice with a label is (the high word of its label key, detail/cupti/thread_work.hpp).
enum class SliceKind : std::uint8_t { other = 0, kernel = 1, memcpy = 2, memset = 3 };

/// A GPU stream as the trace shows it: by handle (events), or by CUPTI's stream id (id >= 0).
struct GpuTrack {
  void* stream;
  int device;
  std::int64_t id{-1};
};

/// Everything one thread records. Fields below `lock` are guarded by it; `stack` and
/// `stack_generation` belong to the owning thread alone.
struct ThreadData {
  OwnerLock lock;
  std::uint32_t tid{0};
  std::size_t index{0};
  std::atomic<bool> exited{false};

  std::vector<Frame> stack;  // owner only (open_labels too, but touched under the lock)
  std::uint64_t stack_generation{0};
  std::vector<std::string> open_labels;  // names of open step frames

  std::uint64_t generation{0};  // bumped by reset()/enable(): the owner drops its open frames
  std::string name;
  std::vector<Node> nodes;
  PathIndex index_by_path;
  std::vector<TraceEvent> trace;
  std::vector<std::string> labels;
  std::vector<Payload> payloads;  // of trace events (only ranges that carry one)
  std::vector<Mark> marks;
  std::unordered_map<std::string, std::uint32_t> mark_index;
  std::vector<Instant> instants;
  Distribution steps;
  StepSeries step_series;  // the steps in order, bounded (the HTML page's step chart)
  std::uint64_t ranges{0};
  std::uint64_t trace_dropped{0};
  std::uint64_t paths_over_limit{0};
  std::uint64_t depth_over_limit{0};
  std::uint64_t marks_over_limit{0};
  std::uint32_t root_first_hint{no_node};  // prediction for ranges with no enclosing range
  std::uint32_t root_last_child{no_node};

  std::unique_ptr<ThreadGpu> gpu[gpu_slots];  // each GPU source's data for this thread
  std::vector<GpuSlice> gpu_trace;
  std::vector<GpuTrack> gpu_tracks;
  // What GPU slices ran (a kernel's name, "Memcpy HtoD", ...) as JSON strings, by label key,
  // and what kind of work each is (the trace's categories).
  std::vector<std::string> gpu_labels;
  std::vector<SliceKind> gpu_label_kinds;
  std::unordered_map<std::uint64_t, std::uint32_t> gpu_label_of;

  /// Index of (stream, device) in gpu_tracks, added on first use. Under the lock.
  std::uint32_t track(void* stream, int device) {
    std::uint32_t i = 0;
    while (i < gpu_tracks.size() &&
           !(gpu_tracks[i].stream == stream && gpu_tracks[i].device == device)) {
      ++i;
    }
    if (i == gpu_tracks.size()) gpu_tracks.push_back(GpuTrack{stream, device, -1});
    return i;
  }

  /// Index of CUPTI's stream `id` on `device` in gpu_tracks, added on first use. Under the lock.
  std::uint32_t track_id(std::uint32_t id, int device) {
    std::uint32_t i = 0;
    while (i < gpu_tracks.size() &&
           !(gpu_tracks[i].id == std::int64_t{id} && gpu_tracks[i].device == device)) {
      ++i;
    }
    if (i == gpu_tracks.size()) gpu_tracks.push_back(GpuTrack{nullptr, device, std::int64_t{id}});
    return i;
  }

  /// Forgets everything recorded (reset(), a forked child). Under the lock.
  void clear_data() noexcept {
    nodes.clear();
    index_by_path.clear();
    trace.clear();
    labels.clear();
    payloads.clear();
    marks.clear();
    mark_index.clear();
    instants.clear();
    steps = Distribution{};
    step_series.clear();
    ranges = 0;
    trace_dropped = 0;
    paths_over_limit = 0;
    depth_over_limit = 0;
    marks_over_limit = 0;
    root_first_hint = no_node;
    root_last_child = no_node;
    gpu_trace.clear();
    gpu_tracks.clear();
    gpu_labels.clear();
    gpu_label_kinds.clear();
    gpu_label_of.clear();
  }
};

struct State;

/// The report as a range sink.
class Sink final : public RangeSink {
 public:
  explicit Sink(State& s) noexcept : s_{s} {}
  void on_push(RangeBegin const& begin) noexcept override;
  void on_pop(char const* domain) noexcept override;
  void on_start(std::uint64_t id, RangeBegin const& begin) noexcept override;
  void on_end(std::uint64_t id) noexcept override;
  void on_mark(RangeBegin const& begin) noexcept override;
  void on_thread_name(std::string_view name) noexcept override;
  void on_stream_name(void const* stream, std::string_view name) noexcept override;

 private:
  State& s_;
};

struct OpenStartEnd {
  std::string domain;
  std::string name;
  std::int64_t start;
  std::uint32_t tid;
};

struct StartEndStats {
  std::string domain;
  std::string name;
  Distribution time;
};

struct StartEndEvent {
  std::uint64_t id;
  std::int64_t start;
  std::int64_t end;
  std::uint32_t tid;
  std::uint32_t stats;
};

/// Open start/end ranges kept at most (ranges never ended must not grow memory without bound).
inline constexpr std::size_t max_open_start_end = std::size_t{1} << 20;

/// A name the program gave a CUDA stream: by handle, and by the key activity records carry
/// (device << 32 | CUPTI stream id) once the GPU source could tell it.
struct StreamName {
  void const* handle;
  std::uint64_t key;
  bool keyed;
  std::string name;
};

/// Names of threads and streams kept at most (a program naming objects in a loop).
inline constexpr std::size_t max_resource_names = 4096;

struct State {
  Sink sink{*this};

  std::mutex mutex;  // threads, options, enabled, origin, names
  std::vector<std::unique_ptr<ThreadData>> threads;
  ReportOptions options{};
  bool enabled{false};
  // Names given through NVTX to threads (by OS thread id) other than the caller.
  std::unordered_map<std::uint32_t, std::string> thread_names;
  // Names given to streams; its own lock, a leaf (the trace writer reads them while streaming).
  mutable std::mutex stream_names_mutex;
  std::vector<StreamName> stream_names;
  bool started{false};
  bool atexit_registered{false};
  std::atomic<bool> exit_written{false};

  // Read on the hot path.
  std::atomic<bool> recording{false};  // enabled: the NVTX tool's callbacks forward events
  // The domains whose ranges form paths (ReportOptions::domains); null: every domain. Lists are
  // kept for the life of the process, so a reader never sees one freed.
  std::atomic<std::vector<std::string> const*> domains{nullptr};
  std::vector<std::unique_ptr<std::vector<std::string> const>> domain_lists;  // mutex
  std::atomic<ReportClock> clock{nullptr};
  std::atomic<std::int64_t> origin{0};
  std::atomic<bool> captured_only{false};
  std::atomic<bool> trace{false};
  std::atomic<GpuSource*> source{nullptr};  // null: GPU timing off
  std::atomic<std::size_t> exact_samples{1024};
  std::atomic<std::size_t> max_trace_events{std::size_t{1} << 20};
  std::atomic<std::size_t> max_paths{std::size_t{1} << 16};
  std::atomic<std::size_t> max_depth{128};
  std::atomic<std::size_t> gpu_depth{0};  // events source: deepest path depth timed (0: all)
  // Wakes the worker that streams the trace to its file (trace/stream.hpp); null: not streamed.
  std::atomic<void (*)() noexcept> trace_wake{nullptr};
  std::string gpu_note;  // why the GPU source is not the one asked for; mutex

  // Start/end ranges.
  std::mutex se_mutex;
  std::unordered_map<std::uint64_t, OpenStartEnd> se_open;
  std::vector<StartEndStats> se_stats;
  std::unordered_map<std::string, std::uint32_t> se_index;
  std::vector<StartEndEvent> se_trace;  // streamed with the threads' events (trace/stream.hpp)
  std::uint64_t se_over_limit{0};       // ends counted under "(other start/end ranges)"
  std::uint64_t se_dropped{0};          // trace events past max_trace_events between two pieces

  // The default clock: the TSC calibrated against steady_clock where that is sound, else
  // steady_clock (clock.hpp). Calibrated once per process, before first use.
  Tsc const tsc{process_tsc()};

  /// The name the program gave the stream of a GPU track ("" when none): by CUPTI's key where
  /// the track has an id, else by handle.
  std::string stream_name(void const* handle, std::int64_t id, int device) const {
    std::lock_guard<std::mutex> lock{stream_names_mutex};
    for (StreamName const& n : stream_names) {
      bool const hit =
          id >= 0
              ? n.keyed && n.key == ((std::uint64_t(device) << 32) | static_cast<std::uint32_t>(id))
              : n.handle == handle;
      if (hit) return n.name;
    }
    return {};
  }

  std::int64_t now() const noexcept {
    ReportClock const c = clock.load(std::memory_order_relaxed);
    return c != nullptr ? c() : clock_now(tsc);
  }
};

/// Events buffered (by a thread, or start/end ranges) when the worker streaming the trace is
/// woken: a batch, or half the buffer when `trace-events` is smaller, so it is emptied before it
/// is full.
inline std::size_t stream_batch(State const& s) noexcept {
  std::size_t const cap = s.max_trace_events.load(std::memory_order_relaxed) / 2;
  return cap == 0 ? 1 : cap < trace_stream_batch ? cap : trace_stream_batch;
}

/// The one report of the process (null until first enabled). Never freed.
NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<State*> state_ptr{nullptr};

inline State* state() noexcept { return state_ptr.load(std::memory_order_acquire); }

/// Registers the calling thread with the report; null when out of memory.
inline ThreadData* register_thread(State& s) noexcept {
  struct ExitMark {
    ThreadData* data{nullptr};
    ~ExitMark() {
      if (data != nullptr) data->exited.store(true, std::memory_order_release);
    }
  };
  thread_local ExitMark mark;
  NSIGHTKIT_DETAIL_TRY {
    auto td = std::make_unique<ThreadData>();
    td->tid = os_thread_id();
    td->stack.reserve(32);
    std::lock_guard<std::mutex> lock{s.mutex};
    auto const named = s.thread_names.find(td->tid);
    if (named != s.thread_names.end()) td->name = named->second;
    td->index = s.threads.size();
    mark.data = td.get();
    s.threads.push_back(std::move(td));
    return mark.data;
  }
  NSIGHTKIT_DETAIL_CATCH(...) { return nullptr; }
  return nullptr;
}

/// The calling thread's data, registered on first use; null when out of memory. The cache is a
/// plain pointer (trivially destructible thread_local: one TLS load on the hot path).
inline ThreadData* thread_data(State& s) noexcept {
  thread_local ThreadData* cached = nullptr;
  if (cached == nullptr) cached = register_thread(s);
  return cached;
}

/// The data of every thread that recorded so far (they are never freed).
inline std::vector<ThreadData*> all_threads(State& s) {
  std::vector<ThreadData*> out;
  std::lock_guard<std::mutex> lock{s.mutex};
  out.reserve(s.threads.size());
  for (auto const& t : s.threads) out.push_back(t.get());
  return out;
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
