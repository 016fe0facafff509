// Internal: the report's recording side — process-wide state, per-thread buffers, the RangeSink
// that fills them, GPU timing with pooled events, and enable/disable/reset. Part of
// <nsightkit/report.hpp> (enabled builds only).
//
// Concurrency. Each recording thread owns a ThreadData (found through a thread_local pointer) with
// its own small spin lock: the owner takes it once per push and once per pop, uncontended; the
// reporting thread takes it only while copying that thread's data. Process-wide locks are taken
// only when a thread records for the first time, for start/end ranges, and by enable/disable.
// ThreadData and the state are never freed (a thread that exits keeps its data; ranges emitted
// from static destructors after the final report land in valid memory).
//
// GPU timing is written against GpuApi, a table of plain functions, so this file needs no CUDA
// header and links no CUDA library: CurrentStream installs the CUDA runtime's table
// (report_cuda.hpp), tests install a fake one.
#pragma once

#if !defined(NSIGHTKIT_DETAIL_REPORT_TYPES)
#error "internal header: include <nsightkit/report.hpp>"
#endif

#include <nsightkit/config.hpp>
#include <nsightkit/detail/capture_state.hpp>
#include <nsightkit/detail/report_clock.hpp>
#include <nsightkit/detail/report_env.hpp>
#include <nsightkit/detail/report_stats.hpp>
#include <nsightkit/detail/sinks.hpp>
#include <nsightkit/detail/thread.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/auxv.h>
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {

inline constexpr std::uint32_t no_node = 0xFFFFFFFFu;

/// A test-and-test-and-set lock: one atomic exchange to take it uncontended.
class ReportSpinLock {
 public:
  void lock() noexcept {
    while (flag_.exchange(true, std::memory_order_acquire)) {
      while (flag_.load(std::memory_order_relaxed)) std::this_thread::yield();
    }
  }
  void unlock() noexcept { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

// ---------------------------------------------------------------------------------------------
// GPU backend interface

/**
 * The operations GPU timing needs, as plain functions over opaque handles. Status 0 is success,
 * `not_ready` is "work still pending"; any other value is an error described by error_name and
 * error_string. The call names in messages are the CUDA runtime's.
 */
struct GpuApi {
  int not_ready;
  int (*current_device)(int* device) noexcept;
  int (*event_create)(void** event) noexcept;
  int (*event_record)(void* event, void* stream) noexcept;
  int (*event_query)(void* event) noexcept;
  int (*event_synchronize)(void* event) noexcept;
  int (*elapsed_ns)(void* start, void* end, double* ns) noexcept;
  int (*stream_capturing)(void* stream, bool* capturing) noexcept;
  int (*create_stream)(void** stream) noexcept;  // a non-blocking stream on the current device
  bool (*is_shutdown)(int status) noexcept;      // the runtime is unloading: stop quietly
  char const* (*error_name)(int status) noexcept;
  char const* (*error_string)(int status) noexcept;
};

/// The calling thread's current stream for GPU timing (api null: none).
struct GpuContext {
  void* stream{nullptr};
  GpuApi const* api{nullptr};
};

NSIGHTKIT_DETAIL_VISIBLE inline thread_local GpuContext current_gpu{};

/// A begin/end event pair of one range.
struct GpuPair {
  void* begin{nullptr};
  void* end{nullptr};
  GpuApi const* api{nullptr};
  void* stream{nullptr};
  int device{0};
  std::uint32_t node{no_node};
  std::uint32_t anchor{0};
  std::uint32_t stream_slot{0};
  std::uint64_t generation{0};
  bool trace{false};
};

/// A reference event on an idle stream whose CPU time is known: GPU times are placed on the CPU
/// time line relative to it (a new one per device each second keeps float precision).
struct GpuAnchor {
  void* event{nullptr};
  GpuApi const* api{nullptr};
  int device{0};
  std::int64_t cpu_ns{0};
  std::uint32_t refs{0};
  bool current{false};
  bool alive{false};
};

struct GpuFreeEvent {
  void* event;
  GpuApi const* api;
  int device;
};

struct GpuTraceEvent {
  std::int64_t start;
  std::int64_t dur;
  std::uint32_t node;
  std::uint32_t stream_slot;
};

struct GpuStreamSlot {
  void* stream;
  int device;
};

// ---------------------------------------------------------------------------------------------
// Per-thread data

/// One distinct path of a thread: (parent, domain, name).
struct ReportNode {
  std::uint32_t parent{no_node};
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
class ReportPathIndex {
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

inline std::uint64_t report_hash(std::uint32_t parent, std::string_view name) noexcept {
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

/// A range open on the owning thread (trivially destructible: cheap to push and pop).
struct ReportFrame {
  std::int64_t start{0};
  char const* domain{nullptr};
  std::uint32_t node{no_node};        // path node; a step frame carries its enclosing path node
  std::uint32_t last_child{no_node};  // path node of the latest child that ended (prediction)
  std::uint32_t gpu{no_node};         // index in ReportThreadData::open_gpu
  std::uint32_t label{no_node};       // index in ReportThreadData::open_labels (a step's name)
  Payload payload{};                  // the range's payload, for its trace event
  bool counted{false};
  bool step{false};
};

/// A completed range for the trace. `label` indexes ThreadData::labels for a step, and
/// ThreadData::payloads for a range with a payload; else no_node.
struct ReportTraceEvent {
  std::int64_t start;
  std::int64_t dur;
  std::uint32_t node;
  std::uint32_t label;
};

struct ReportMark {
  std::string domain;
  std::string name;
  std::uint64_t count{0};
};

struct ReportInstant {
  std::int64_t t;
  std::uint32_t mark;
};

/// Everything one thread records. Fields below `lock` are guarded by it; `stack` and
/// `stack_generation` belong to the owning thread alone.
struct ReportThreadData {
  ReportSpinLock lock;
  std::uint32_t tid{0};
  std::size_t index{0};
  std::atomic<bool> exited{false};

  std::vector<ReportFrame> stack;  // owner only (open_* too, but touched under the lock)
  std::uint64_t stack_generation{0};
  std::vector<GpuPair> open_gpu;         // pairs of open frames; a slot with null api is free
  std::vector<std::string> open_labels;  // names of open step frames

  std::uint64_t generation{0};  // bumped by reset()/enable(): the owner drops its open frames
  std::string name;
  std::vector<ReportNode> nodes;
  ReportPathIndex index_by_path;
  std::vector<ReportTraceEvent> trace;
  std::vector<std::string> labels;
  std::vector<Payload> payloads;  // of trace events (only ranges that carry one)
  std::vector<ReportMark> marks;
  std::unordered_map<std::string, std::uint32_t> mark_index;
  std::vector<ReportInstant> instants;
  Distribution steps;
  std::uint64_t ranges{0};
  std::uint64_t trace_dropped{0};
  std::uint64_t paths_over_limit{0};
  std::uint32_t root_first_hint{no_node};  // prediction for ranges with no enclosing range
  std::uint32_t root_last_child{no_node};

  std::deque<GpuPair> pending;
  std::vector<GpuFreeEvent> free_events;
  std::vector<GpuAnchor> anchors;
  std::vector<GpuTraceEvent> gpu_trace;
  std::vector<GpuStreamSlot> streams;
};

class ReportLock {
 public:
  explicit ReportLock(ReportSpinLock& l) noexcept : l_{l} { l_.lock(); }
  ~ReportLock() { l_.unlock(); }
  ReportLock(ReportLock const&) = delete;
  ReportLock& operator=(ReportLock const&) = delete;

 private:
  ReportSpinLock& l_;
};

// ---------------------------------------------------------------------------------------------
// Process-wide state

struct ReportState;

/// The report as a range sink.
class ReportSink final : public RangeSink {
 public:
  explicit ReportSink(ReportState& s) noexcept : s_{s} {}
  void on_push(RangeBegin const& begin) noexcept override;
  void on_pop(char const* domain) noexcept override;
  void on_start(std::uint64_t id, RangeBegin const& begin) noexcept override;
  void on_end(std::uint64_t id) noexcept override;
  void on_mark(RangeBegin const& begin) noexcept override;
  void on_thread_name(std::string_view name) noexcept override;

 private:
  ReportState& s_;
};

struct ReportOpenStartEnd {
  std::string domain;
  std::string name;
  std::int64_t start;
  std::uint32_t tid;
};

struct ReportStartEndStats {
  std::string domain;
  std::string name;
  Distribution time;
};

struct ReportStartEndEvent {
  std::uint64_t id;
  std::int64_t start;
  std::int64_t end;
  std::uint32_t tid;
  std::uint32_t stats;
};

struct ReportAnchorStream {
  GpuApi const* api;
  int device;
  void* stream;
};

struct ReportState {
  ReportSink sink{*this};

  std::mutex mutex;  // threads, options, enabled, origin
  std::vector<std::unique_ptr<ReportThreadData>> threads;
  ReportOptions options{};
  bool enabled{false};
  bool started{false};
  bool atexit_registered{false};
  std::atomic<bool> exit_written{false};

  // Read on the hot path.
  std::atomic<ReportClock> clock{nullptr};
  std::atomic<std::int64_t> origin{0};
  std::atomic<bool> captured_only{false};
  std::atomic<bool> trace{false};
  std::atomic<bool> gpu{true};
  std::atomic<std::size_t> exact_samples{1024};
  std::atomic<std::size_t> max_trace_events{std::size_t{1} << 20};
  std::atomic<std::size_t> max_paths{std::size_t{1} << 16};

  // Start/end ranges.
  std::mutex se_mutex;
  std::unordered_map<std::uint64_t, ReportOpenStartEnd> se_open;
  std::vector<ReportStartEndStats> se_stats;
  std::unordered_map<std::string, std::uint32_t> se_index;
  std::vector<ReportStartEndEvent> se_trace;

  // GPU timing.
  std::mutex gpu_mutex;  // anchor streams, error text, atexit registration
  std::vector<ReportAnchorStream> anchor_streams;
  std::string gpu_error;
  bool gpu_atexit_registered{false};
  std::atomic<bool> gpu_failed{false};
  std::atomic<bool> gpu_shutdown{false};
  std::atomic<std::uint64_t> gpu_events_created{0};
  std::atomic<std::uint64_t> gpu_timed{0};
  std::atomic<std::uint64_t> gpu_skipped{0};

  // The default clock: the TSC calibrated against steady_clock where that is sound, else
  // steady_clock (detail/report_clock.hpp). Calibrated once per process, before first use.
  ReportTsc const tsc{report_tsc()};

  std::int64_t now() const noexcept {
    ReportClock const c = clock.load(std::memory_order_relaxed);
    return c != nullptr ? c() : report_clock_now(tsc);
  }
};

/// Pending GPU pairs per thread beyond which new ranges are not timed (bounded memory when the
/// GPU falls far behind).
inline constexpr std::size_t gpu_max_pending = std::size_t{1} << 16;
/// Open start/end ranges kept at most (ranges never ended must not grow memory without bound).
inline constexpr std::size_t max_open_start_end = std::size_t{1} << 20;

/// The one report of the process (null until first enabled). Never freed.
NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<ReportState*> report_state_ptr{nullptr};
NSIGHTKIT_DETAIL_VISIBLE inline std::mutex report_create_mutex;
/// Set in a copy of nsightkit that found another copy's report in the process.
NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<bool> report_duplicate_copy{false};
NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<bool> report_autostart_done{false};

inline ReportState* report_state() noexcept {
  return report_state_ptr.load(std::memory_order_acquire);
}

/// A token that differs between processes and between exec'd images of one process id.
inline std::string report_process_token() {
  std::string t = std::to_string(process_id());
#if defined(__linux__) && defined(AT_RANDOM)
  if (auto const* r = reinterpret_cast<unsigned char const*>(::getauxval(AT_RANDOM))) {
    char buf[17];
    for (int i = 0; i < 8; ++i) std::snprintf(buf + 2 * i, 3, "%02x", static_cast<unsigned>(r[i]));
    t += '-';
    t += buf;
  }
#endif
  return t;
}

inline constexpr char const report_owner_variable[] = "NSIGHTKIT_DETAIL_REPORT_OWNER";

/// Claims the process for this copy of the report state, through an environment variable (the one
/// thing every copy of nsightkit in a process shares even when their symbols are not unified).
/// False, with one message, when another copy already claimed it.
inline bool report_claim_process() {
  std::string const token = report_process_token();
  char self[32];
  std::snprintf(self, sizeof self, "%p", static_cast<void const*>(&report_state_ptr));
  std::string const mine = token + ":" + self;
  char const* previous = std::getenv(report_owner_variable);
  if (previous != nullptr) {
    std::string_view const p{previous};
    if (p.size() > token.size() && p.compare(0, token.size(), token) == 0 &&
        p[token.size()] == ':' && p != mine) {
      if (!report_duplicate_copy.exchange(true)) {
        std::fprintf(
            stderr,
            "nsightkit report: this module carries a second copy of nsightkit's report (it embeds "
            "nsightkit and was loaded so that its symbols are not shared, e.g. dlopen(RTLD_LOCAL) "
            "with a "
            "compiler that emits no unique symbols); its ranges are not in the process's report, "
            "and "
            "this copy stays off. Load it with RTLD_GLOBAL or link it normally.\n");
      }
      return false;
    }
  }
#if defined(_WIN32)
  (void)_putenv_s(report_owner_variable, mine.c_str());
#else
  (void)::setenv(report_owner_variable, mine.c_str(), 1);
#endif
  return true;
}

inline ReportState* report_state_create() noexcept {
  if (ReportState* s = report_state()) return s;
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  try {
#endif
    std::lock_guard<std::mutex> lock{report_create_mutex};
    if (ReportState* s = report_state()) return s;
    if (!report_claim_process()) return nullptr;
    auto* s = new ReportState{};  // leaked on purpose: ranges may end during static destruction
    report_state_ptr.store(s, std::memory_order_release);
    return s;
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  } catch (...) {
    return nullptr;
  }
#endif
}

/// Registers the calling thread with the report; null when out of memory.
inline ReportThreadData* report_register_thread(ReportState& s) noexcept {
  struct ExitMark {
    ReportThreadData* data{nullptr};
    ~ExitMark() {
      if (data != nullptr) data->exited.store(true, std::memory_order_release);
    }
  };
  thread_local ExitMark mark;
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  try {
#endif
    auto td = std::make_unique<ReportThreadData>();
    td->tid = os_thread_id();
    td->stack.reserve(32);
    std::lock_guard<std::mutex> lock{s.mutex};
    td->index = s.threads.size();
    mark.data = td.get();
    s.threads.push_back(std::move(td));
    return mark.data;
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  } catch (...) {
    return nullptr;
  }
#endif
}

/// The calling thread's data, registered on first use; null when out of memory. The cache is a
/// plain pointer (trivially destructible thread_local: one TLS load on the hot path).
inline ReportThreadData* report_thread_data(ReportState& s) noexcept {
  thread_local ReportThreadData* cached = nullptr;
  if (cached == nullptr) cached = report_register_thread(s);
  return cached;
}

// ---------------------------------------------------------------------------------------------
// GPU timing core (generic over GpuApi)

inline void gpu_fail(ReportState& s, GpuApi const& api, int status, char const* call) noexcept {
  if (api.is_shutdown(status)) {
    s.gpu_shutdown.store(true, std::memory_order_release);
    return;
  }
  if (s.gpu_failed.exchange(true)) return;
  char const* name = api.error_name(status);
  char const* text = api.error_string(status);
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s returned %s (%d): %s", call, name ? name : "unknown error",
                status, text ? text : "");
  {
    std::lock_guard<std::mutex> lock{s.gpu_mutex};
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
    try {
      s.gpu_error = buf;
    } catch (...) {
    }
#else
    s.gpu_error = buf;
#endif
  }
  std::fprintf(stderr,
               "nsightkit report: GPU timing is off for the rest of the run: %s (CPU times are "
               "still reported)\n",
               buf);
}

inline bool gpu_take_event(ReportState& s, ReportThreadData& td, GpuApi const& api, int device,
                           void** event) {
  for (std::size_t i = td.free_events.size(); i-- > 0;) {
    if (td.free_events[i].api == &api && td.free_events[i].device == device) {
      *event = td.free_events[i].event;
      td.free_events[i] = td.free_events.back();
      td.free_events.pop_back();
      return true;
    }
  }
  int const st = api.event_create(event);
  if (st != 0) {
    gpu_fail(s, api, st, "cudaEventCreateWithFlags");
    return false;
  }
  s.gpu_events_created.fetch_add(1, std::memory_order_relaxed);
  return true;
}

inline void gpu_give_event(ReportThreadData& td, GpuApi const* api, int device, void* event) {
  td.free_events.push_back(GpuFreeEvent{event, api, device});
}

inline void gpu_unref_anchor(ReportThreadData& td, std::uint32_t index) {
  if (index >= td.anchors.size()) return;
  GpuAnchor& a = td.anchors[index];
  if (a.refs > 0) --a.refs;
  if (a.refs == 0 && !a.current && a.alive) {
    gpu_give_event(td, a.api, a.device, a.event);
    a.alive = false;
  }
}

inline void gpu_release_pair(ReportThreadData& td, GpuPair const& p) {
  gpu_give_event(td, p.api, p.device, p.begin);
  gpu_give_event(td, p.api, p.device, p.end);
  gpu_unref_anchor(td, p.anchor);
}

/// The idle stream anchors are recorded on, one per device (and backend); null on failure.
inline void* gpu_anchor_stream(ReportState& s, GpuApi const& api, int device) {
  int st = 0;
  {
    std::lock_guard<std::mutex> lock{s.gpu_mutex};
    for (auto const& a : s.anchor_streams) {
      if (a.api == &api && a.device == device) return a.stream;
    }
    void* stream = nullptr;
    st = api.create_stream(&stream);
    if (st == 0) {
      s.anchor_streams.push_back(ReportAnchorStream{&api, device, stream});
      return stream;
    }
  }
  gpu_fail(s, api, st, "cudaStreamCreateWithFlags");
  return nullptr;
}

/// The current anchor of (api, device) for this thread, renewed once a second.
inline std::uint32_t gpu_anchor(ReportState& s, ReportThreadData& td, GpuApi const& api,
                                int device) {
  std::int64_t const now = s.now();
  std::uint32_t current = no_node;
  for (std::uint32_t i = 0; i < td.anchors.size(); ++i) {
    GpuAnchor const& a = td.anchors[i];
    if (a.alive && a.current && a.api == &api && a.device == device) current = i;
  }
  if (current != no_node && now - td.anchors[current].cpu_ns < 1'000'000'000) return current;
  void* stream = gpu_anchor_stream(s, api, device);
  if (stream == nullptr) return no_node;
  void* event = nullptr;
  if (!gpu_take_event(s, td, api, device, &event)) return no_node;
  int const st = api.event_record(event, stream);
  if (st != 0) {
    gpu_give_event(td, &api, device, event);
    gpu_fail(s, api, st, "cudaEventRecord");
    return no_node;
  }
  std::int64_t const cpu = s.now();  // the event is submitted to an idle stream: it runs now
  if (current != no_node) {
    td.anchors[current].current = false;
    td.anchors[current].refs += 1;  // balanced right below: frees it if no pair uses it
    gpu_unref_anchor(td, current);
  }
  GpuAnchor fresh{event, &api, device, cpu, 0, true, true};
  for (std::uint32_t i = 0; i < td.anchors.size(); ++i) {
    if (!td.anchors[i].alive) {
      td.anchors[i] = fresh;
      return i;
    }
  }
  td.anchors.push_back(fresh);
  return static_cast<std::uint32_t>(td.anchors.size() - 1);
}

inline void report_gpu_at_exit() noexcept;

/// Records the begin event of `f` on the current stream. Under the thread's lock.
inline void gpu_begin(ReportState& s, ReportThreadData& td, ReportFrame& f, GpuContext const& ctx) {
  if (s.gpu_failed.load(std::memory_order_relaxed) ||
      s.gpu_shutdown.load(std::memory_order_relaxed))
    return;
  GpuApi const& api = *ctx.api;
  if (td.pending.size() >= gpu_max_pending) {
    s.gpu_skipped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  int device = 0;
  if (int const st = api.current_device(&device); st != 0)
    return gpu_fail(s, api, st, "cudaGetDevice");
  bool capturing = false;
  if (int const st = api.stream_capturing(ctx.stream, &capturing); st != 0) {
    return gpu_fail(s, api, st, "cudaStreamIsCapturing");
  }
  if (capturing) {  // an event recorded now would belong to the graph, not to this range's run
    s.gpu_skipped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::uint32_t slot = 0;
  while (slot < td.streams.size() &&
         !(td.streams[slot].stream == ctx.stream && td.streams[slot].device == device)) {
    ++slot;
  }
  if (slot == td.streams.size()) td.streams.push_back(GpuStreamSlot{ctx.stream, device});
  std::uint32_t const anchor = gpu_anchor(s, td, api, device);
  if (anchor == no_node) return;
  void* begin = nullptr;
  void* end = nullptr;
  if (!gpu_take_event(s, td, api, device, &begin)) return;
  if (!gpu_take_event(s, td, api, device, &end)) {
    gpu_give_event(td, &api, device, begin);
    return;
  }
  if (int const st = api.event_record(begin, ctx.stream); st != 0) {
    gpu_give_event(td, &api, device, begin);
    gpu_give_event(td, &api, device, end);
    return gpu_fail(s, api, st, "cudaEventRecord");
  }
  ++td.anchors[anchor].refs;
  f.gpu = static_cast<std::uint32_t>(td.open_gpu.size());
  td.open_gpu.push_back(GpuPair{begin, end, &api, ctx.stream, device, f.node, anchor, slot,
                                td.generation, s.trace.load(std::memory_order_relaxed)});
  if (!s.gpu_atexit_registered) {
    // Registered after the CUDA runtime initialised (it just ran), so it runs before the
    // runtime's own teardown: pending events are resolved while CUDA still works.
    std::lock_guard<std::mutex> lock{s.gpu_mutex};
    if (!s.gpu_atexit_registered) {
      s.gpu_atexit_registered = true;
      std::atexit(report_gpu_at_exit);
    }
  }
}

/// Takes the open pair of a frame out of ReportThreadData::open_gpu.
inline GpuPair gpu_take_open(ReportThreadData& td, std::uint32_t index) {
  GpuPair p = td.open_gpu[index];
  td.open_gpu[index].api = nullptr;
  while (!td.open_gpu.empty() && td.open_gpu.back().api == nullptr) td.open_gpu.pop_back();
  return p;
}

/// Records the end event of the frame's pair and queues it. Under the thread's lock.
inline void gpu_end(ReportState& s, ReportThreadData& td, ReportFrame const& f) {
  GpuPair const p = gpu_take_open(td, f.gpu);
  if (s.gpu_failed.load(std::memory_order_relaxed) ||
      s.gpu_shutdown.load(std::memory_order_relaxed)) {
    gpu_release_pair(td, p);
    return;
  }
  if (int const st = p.api->event_record(p.end, p.stream); st != 0) {
    gpu_release_pair(td, p);
    return gpu_fail(s, *p.api, st, "cudaEventRecord");
  }
  td.pending.push_back(p);
}

/// Resolves up to `max` completed pairs, oldest first, without waiting. Under the thread's lock.
inline void gpu_poll(ReportState& s, ReportThreadData& td, std::size_t max) {
  std::size_t done = 0;
  std::size_t const cap = s.exact_samples.load(std::memory_order_relaxed);
  while (!td.pending.empty() && done < max) {
    GpuPair const p = td.pending.front();
    if (s.gpu_shutdown.load(std::memory_order_relaxed) ||
        s.gpu_failed.load(std::memory_order_relaxed)) {
      gpu_release_pair(td, p);  // CUDA is gone or broken: drop without calling it
      td.pending.pop_front();
      continue;
    }
    GpuApi const& api = *p.api;
    int st = api.event_query(p.end);
    if (st == api.not_ready) break;
    if (st != 0) {
      gpu_fail(s, api, st, "cudaEventQuery");
      continue;  // the loop drops the rest
    }
    double ns = 0.0;
    st = api.elapsed_ns(p.begin, p.end, &ns);
    if (st == api.not_ready) break;
    if (st != 0) {
      gpu_fail(s, api, st, "cudaEventElapsedTime");
      continue;
    }
    double offset = 0.0;
    int anchor_st = 1;
    if (p.trace && p.anchor < td.anchors.size()) {
      anchor_st = api.elapsed_ns(td.anchors[p.anchor].event, p.begin, &offset);
      if (anchor_st == api.not_ready) break;
    }
    if (p.generation == td.generation && p.node < td.nodes.size()) {
      td.nodes[p.node].gpu.add(std::llround(ns), cap);
      s.gpu_timed.fetch_add(1, std::memory_order_relaxed);
      if (p.trace && anchor_st == 0) {
        if (td.gpu_trace.size() < s.max_trace_events.load(std::memory_order_relaxed)) {
          td.gpu_trace.push_back(GpuTraceEvent{td.anchors[p.anchor].cpu_ns + std::llround(offset),
                                               std::llround(ns), p.node, p.stream_slot});
        } else {
          ++td.trace_dropped;
        }
      }
    }
    gpu_release_pair(td, p);
    td.pending.pop_front();
    ++done;
  }
}

/// Waits for every pair already ended on every thread and resolves them (report time only). The
/// wait happens outside the thread's lock, so the thread keeps recording meanwhile.
inline void gpu_flush(ReportState& s) {
  std::vector<ReportThreadData*> threads;
  {
    std::lock_guard<std::mutex> lock{s.mutex};
    for (auto const& t : s.threads) threads.push_back(t.get());
  }
  for (ReportThreadData* td : threads) {
    std::vector<std::pair<GpuApi const*, void*>> wait;
    {
      ReportLock lock{td->lock};
      if (td->pending.empty()) continue;
      for (GpuPair const& p : td->pending) {
        wait.emplace_back(p.api, p.end);
        if (p.trace && p.anchor < td->anchors.size())
          wait.emplace_back(p.api, td->anchors[p.anchor].event);
      }
    }
    for (auto const& w : wait) {
      if (s.gpu_shutdown.load(std::memory_order_relaxed) ||
          s.gpu_failed.load(std::memory_order_relaxed))
        break;
      int const st = w.first->event_synchronize(w.second);
      if (st != 0 && st != w.first->not_ready) {
        gpu_fail(s, *w.first, st, "cudaEventSynchronize");
        break;
      }
    }
    ReportLock lock{td->lock};
    gpu_poll(s, *td, static_cast<std::size_t>(-1));
  }
}

inline void report_gpu_at_exit() noexcept {
  ReportState* s = report_state();
  if (s == nullptr) return;
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  try {
#endif
    gpu_flush(*s);
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  } catch (...) {
  }
#endif
  // The CUDA runtime tears down after this handler: no CUDA call from the report from now on.
  s->gpu_shutdown.store(true, std::memory_order_release);
}

// ---------------------------------------------------------------------------------------------
// Recording

/// Drops the owner's open frames when reset()/enable() moved the generation. Under the lock.
/// Returns false when it dropped them.
inline bool report_sync_stack(ReportThreadData& td) {
  if (td.stack_generation == td.generation) return true;
  for (GpuPair const& p : td.open_gpu) {
    if (p.api != nullptr) gpu_release_pair(td, p);
  }
  td.open_gpu.clear();
  td.open_labels.clear();
  td.stack.clear();
  td.root_last_child = no_node;
  td.stack_generation = td.generation;
  return false;
}

inline bool report_same_domain(ReportNode const& n, char const* domain) noexcept {
  return n.domain_key == domain || n.domain == domain;
}

/// The node of path (parent, domain, name), created on first sight. Under the lock.
inline std::uint32_t report_node(ReportState& s, ReportThreadData& td, std::uint32_t parent,
                                 char const* domain, std::string_view name) {
  std::uint64_t const h = report_hash(parent, name);
  std::uint32_t found = td.index_by_path.find(h, [&](std::uint32_t i) {
    ReportNode const& n = td.nodes[i];
    return n.parent == parent && n.name == name && report_same_domain(n, domain);
  });
  if (found != no_node) return found;
  if (td.nodes.size() >= s.max_paths.load(std::memory_order_relaxed)) {
    // Past the limit every new path of a parent is counted under one "(other paths)" child.
    ++td.paths_over_limit;
    static constexpr std::string_view other = "(other paths)";
    std::uint64_t const oh = report_hash(parent, other);
    found = td.index_by_path.find(oh, [&](std::uint32_t i) {
      return td.nodes[i].parent == parent && td.nodes[i].name == other;
    });
    if (found != no_node) return found;
    name = other;
    domain = "";
  }
  ReportNode n;
  n.parent = parent;
  n.hash = report_hash(parent, name);
  n.domain_key = domain;
  n.domain = domain;
  n.name = std::string{name};
  auto const id = static_cast<std::uint32_t>(td.nodes.size());
  td.nodes.push_back(std::move(n));
  td.index_by_path.insert(td.nodes.back().hash, id);
  return id;
}

inline bool report_counted(ReportState& s) noexcept {
  return !s.captured_only.load(std::memory_order_relaxed) || capture_active();
}

inline void ReportSink::on_push(RangeBegin const& b) noexcept {
  ReportThreadData* td = report_thread_data(s_);
  if (td == nullptr) return;
  bool const counted = report_counted(s_);
  bool const step = b.attributes != nullptr && is_step_range(*b.attributes);
  GpuContext const gpu = current_gpu;
  ReportLock lock{td->lock};
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  try {
#endif
    report_sync_stack(*td);
    bool const root = td->stack.empty();
    std::uint32_t const parent = root ? no_node : td->stack.back().node;
    std::uint32_t node =
        parent;  // a step carries its enclosing path node: steps are not components
    if (!step) {
      // Predicted node first: the sibling that followed the previous child last time.
      std::uint32_t const prev = root ? td->root_last_child : td->stack.back().last_child;
      std::size_t const n = td->nodes.size();
      std::uint32_t const guess = prev < n            ? td->nodes[prev].next_hint
                                  : parent < n        ? td->nodes[parent].first_hint
                                  : parent == no_node ? td->root_first_hint
                                                      : no_node;
      if (guess < n && td->nodes[guess].parent == parent && td->nodes[guess].name == b.name &&
          report_same_domain(td->nodes[guess], b.domain)) {
        node = guess;
      } else {
        node = report_node(s_, *td, parent, b.domain, b.name);
        if (prev < n) {
          td->nodes[prev].next_hint = node;
        } else if (parent < n) {
          td->nodes[parent].first_hint = node;
        } else if (parent == no_node) {
          td->root_first_hint = node;
        }
      }
    }
    std::uint32_t label = no_node;
    if (step && counted) {
      label = static_cast<std::uint32_t>(td->open_labels.size());
      td->open_labels.emplace_back(b.name.data(), b.name.size());
    }
    ReportFrame& top = td->stack.emplace_back();  // before GPU work: the pop must find its frame
    top.domain = b.domain;
    top.counted = counted;
    top.step = step;
    top.node = node;
    top.label = label;
    top.payload = b.attributes->payload();
    if (counted && !step && gpu.api != nullptr && s_.gpu.load(std::memory_order_relaxed)) {
      gpu_begin(s_, *td, top, gpu);
    }
    top.start = s_.now();  // last: the bookkeeping above is not part of the range
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  } catch (...) {
    ++td->generation;  // out of memory: forget this thread's open ranges rather than mismatch them
  }
#endif
}

inline void ReportSink::on_pop(char const* domain) noexcept {
  std::int64_t const now = s_.now();
  ReportThreadData* td = report_thread_data(s_);
  if (td == nullptr) return;
  ReportLock lock{td->lock};
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  try {
#endif
    if (!report_sync_stack(*td)) return;
    // Push/pop nest per domain: the innermost open frame of this domain ends. A pop whose push
    // this sink never saw (enabled mid-range) finds none and is ignored.
    std::size_t i = td->stack.size();
    while (i > 0) {  // almost always the top frame, same pointer
      char const* d = td->stack[i - 1].domain;
      if (d == domain || (d != nullptr && domain != nullptr && std::strcmp(d, domain) == 0)) break;
      --i;
    }
    if (i == 0) return;
    if (i != td->stack.size()) {
      // Domains interleaved without nesting: bring the ending frame to the top (order of the
      // others is kept).
      std::rotate(td->stack.begin() + static_cast<std::ptrdiff_t>(i - 1),
                  td->stack.begin() + static_cast<std::ptrdiff_t>(i), td->stack.end());
    }
    ReportFrame const f = td->stack.back();
    if (f.counted) {
      std::int64_t const dur = now > f.start ? now - f.start : 0;
      std::size_t const cap = s_.exact_samples.load(std::memory_order_relaxed);
      ++td->ranges;
      if (f.step) {
        td->steps.add(dur, cap);
      } else if (f.node < td->nodes.size()) {
        td->nodes[f.node].cpu.add(dur, cap);
      }
      if (s_.trace.load(std::memory_order_relaxed)) {
        if (td->trace.size() < s_.max_trace_events.load(std::memory_order_relaxed)) {
          std::uint32_t label = no_node;
          if (f.step && f.label < td->open_labels.size()) {
            label = static_cast<std::uint32_t>(td->labels.size());
            td->labels.push_back(std::move(td->open_labels[f.label]));
          } else if (!f.step && f.payload.kind() != PayloadKind::none) {
            label = static_cast<std::uint32_t>(td->payloads.size());
            td->payloads.push_back(f.payload);
          }
          td->trace.push_back(ReportTraceEvent{f.start, dur, f.step ? no_node : f.node, label});
        } else {
          ++td->trace_dropped;
        }
      }
      if (f.gpu != no_node) gpu_end(s_, *td, f);
    }
    if (f.label != no_node && f.label + 1 == td->open_labels.size()) td->open_labels.pop_back();
    td->stack.pop_back();
    if (!f.step) (td->stack.empty() ? td->root_last_child : td->stack.back().last_child) = f.node;
    if (td->stack.empty()) {  // drop slots left behind by frames that ended out of order
      td->open_labels.clear();
      td->open_gpu.clear();
    }
    if (!td->pending.empty()) gpu_poll(s_, *td, 4);
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  } catch (...) {
    ++td->generation;  // out of memory: forget this thread's open ranges rather than mismatch them
  }
#endif
}

inline std::string report_key(std::string_view domain, std::string_view name) {
  std::string k{domain};
  k += '\x1f';
  k += name;
  return k;
}

inline void ReportSink::on_mark(RangeBegin const& b) noexcept {
  if (!report_counted(s_)) return;
  std::int64_t const now = s_.now();
  ReportThreadData* td = report_thread_data(s_);
  if (td == nullptr) return;
  ReportLock lock{td->lock};
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  try {
#endif
    std::string const key = report_key(b.domain, b.name);
    auto it = td->mark_index.find(key);
    std::uint32_t m;
    if (it == td->mark_index.end()) {
      m = static_cast<std::uint32_t>(td->marks.size());
      td->marks.push_back(ReportMark{b.domain, std::string{b.name}, 0});
      td->mark_index.emplace(key, m);
    } else {
      m = it->second;
    }
    ++td->marks[m].count;
    if (s_.trace.load(std::memory_order_relaxed)) {
      if (td->instants.size() < s_.max_trace_events.load(std::memory_order_relaxed)) {
        td->instants.push_back(ReportInstant{now, m});
      } else {
        ++td->trace_dropped;
      }
    }
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  } catch (...) {
  }
#endif
}

inline void ReportSink::on_thread_name(std::string_view name) noexcept {
  ReportThreadData* td = report_thread_data(s_);
  if (td == nullptr) return;
  ReportLock lock{td->lock};
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  try {
#endif
    td->name.assign(name.data(), name.size());
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  } catch (...) {
  }
#endif
}

inline void ReportSink::on_start(std::uint64_t id, RangeBegin const& b) noexcept {
  if (!report_counted(s_)) return;
  std::uint32_t const tid = os_thread_id();
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  try {
#endif
    ReportOpenStartEnd open{b.domain, std::string{b.name}, 0, tid};
    std::lock_guard<std::mutex> lock{s_.se_mutex};
    if (s_.se_open.size() >= max_open_start_end) return;
    open.start = s_.now();
    s_.se_open.emplace(id, std::move(open));
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  } catch (...) {
  }
#endif
}

inline void ReportSink::on_end(std::uint64_t id) noexcept {
  std::int64_t const now = s_.now();
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  try {
#endif
    std::lock_guard<std::mutex> lock{s_.se_mutex};
    auto it = s_.se_open.find(id);
    if (it == s_.se_open.end()) return;
    ReportOpenStartEnd const& o = it->second;
    std::string const key = report_key(o.domain, o.name);
    auto si = s_.se_index.find(key);
    std::uint32_t idx;
    if (si == s_.se_index.end()) {
      idx = static_cast<std::uint32_t>(s_.se_stats.size());
      s_.se_stats.push_back(ReportStartEndStats{o.domain, o.name, Distribution{}});
      s_.se_index.emplace(key, idx);
    } else {
      idx = si->second;
    }
    std::int64_t const dur = now > o.start ? now - o.start : 0;
    s_.se_stats[idx].time.add(dur, s_.exact_samples.load(std::memory_order_relaxed));
    if (s_.trace.load(std::memory_order_relaxed) &&
        s_.se_trace.size() < s_.max_trace_events.load(std::memory_order_relaxed)) {
      s_.se_trace.push_back(ReportStartEndEvent{id, o.start, o.start + dur, o.tid, idx});
    }
    s_.se_open.erase(it);
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  } catch (...) {
  }
#endif
}

// ---------------------------------------------------------------------------------------------
// Lifecycle

inline void report_at_exit() noexcept;

/// Copies the hot-path switches out of `o`. Under s.mutex.
inline void report_apply(ReportState& s, ReportOptions const& o) noexcept {
  ReportClock const old = s.clock.exchange(o.clock, std::memory_order_relaxed);
  if (!s.started || old != o.clock) s.origin.store(s.now(), std::memory_order_relaxed);
  s.started = true;
  s.captured_only.store(o.captured_only, std::memory_order_relaxed);
  s.trace.store(!o.trace.empty() || o.record_trace, std::memory_order_relaxed);
  s.gpu.store(o.gpu, std::memory_order_relaxed);
  s.exact_samples.store(o.exact_samples, std::memory_order_relaxed);
  s.max_trace_events.store(o.max_trace_events, std::memory_order_relaxed);
  s.max_paths.store(o.max_paths == 0 ? 1 : o.max_paths, std::memory_order_relaxed);
}

/// Makes every thread drop its open frames at its next range event. Under s.mutex.
inline void report_bump_generations(ReportState& s) noexcept {
  for (auto const& t : s.threads) {
    ReportLock lock{t->lock};
    ++t->generation;
  }
}

inline bool report_enable(ReportOptions const& options) noexcept {
  ReportState* s = report_state_create();
  if (s == nullptr) return false;
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  try {
#endif
    std::lock_guard<std::mutex> lock{s->mutex};
    s->options = options;
    report_apply(*s, options);
    if (!s->enabled) {
      // Frames left open by an earlier disable() never see their pop: forget them.
      report_bump_generations(*s);
      if (!add_sink(&s->sink)) {
        std::fprintf(stderr,
                     "nsightkit report: cannot enable: nsightkit's table of %d in-process "
                     "consumers is full\n",
                     SinkRegistry::capacity);
        return false;
      }
      s->enabled = true;
    }
    if (options.at_exit && !s->atexit_registered) {
      s->atexit_registered = true;
      std::atexit(report_at_exit);
    }
    s->exit_written.store(false, std::memory_order_relaxed);
    return true;
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  } catch (...) {
    return false;
  }
#endif
}

inline bool report_enable_from_environment() noexcept {
  char const* value = std::getenv("NSIGHTKIT_REPORT");
  if (value == nullptr) return false;
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  try {
#endif
    ReportOptions o;
    bool on = false;
    std::string why;
    if (!parse_report_spec(value, o, on, why)) {
      std::fprintf(stderr, "nsightkit: NSIGHTKIT_REPORT='%s': %s. The report stays off.\n", value,
                   why.c_str());
      return false;
    }
    if (!on) return false;
    return report_enable(o);
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  } catch (...) {
    return false;
  }
#endif
}

/// Reads NSIGHTKIT_REPORT once per process (per copy of nsightkit, see report_claim_process).
inline bool report_autostart() noexcept {
  if (report_autostart_done.exchange(true)) return false;
  return report_enable_from_environment();
}

inline void report_disable() noexcept {
  ReportState* s = report_state();
  if (s == nullptr) return;
  std::lock_guard<std::mutex> lock{s->mutex};
  if (!s->enabled) return;
  remove_sink(&s->sink);
  s->enabled = false;
}

inline bool report_is_enabled() noexcept {
  ReportState* s = report_state();
  if (s == nullptr) return false;
  std::lock_guard<std::mutex> lock{s->mutex};
  return s->enabled;
}

inline ReportOptions report_options() {
  ReportState* s = report_state();
  if (s == nullptr) return ReportOptions{};
  std::lock_guard<std::mutex> lock{s->mutex};
  return s->options;
}

inline void report_reset() noexcept {
  ReportState* s = report_state();
  if (s == nullptr) return;
  std::lock_guard<std::mutex> lock{s->mutex};
  s->origin.store(s->now(), std::memory_order_relaxed);
  for (auto const& t : s->threads) {
    ReportLock tl{t->lock};
    ++t->generation;  // pending GPU pairs of the old generation are dropped when they resolve
    t->nodes.clear();
    t->index_by_path.clear();
    t->trace.clear();
    t->labels.clear();
    t->payloads.clear();
    t->marks.clear();
    t->mark_index.clear();
    t->instants.clear();
    t->steps = Distribution{};
    t->ranges = 0;
    t->trace_dropped = 0;
    t->paths_over_limit = 0;
    t->root_first_hint = no_node;
    t->gpu_trace.clear();
  }
  {
    std::lock_guard<std::mutex> se{s->se_mutex};
    s->se_open.clear();
    s->se_stats.clear();
    s->se_index.clear();
    s->se_trace.clear();
  }
  s->gpu_timed.store(0, std::memory_order_relaxed);
  s->gpu_skipped.store(0, std::memory_order_relaxed);
}

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
