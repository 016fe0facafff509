// Internal: the Chrome trace-event JSON export (Perfetto UI, chrome://tracing): one track per
// thread with its ranges ("X"), marks ("i") and step ranges, one track per GPU stream with the GPU
// slices the source measured, start/end ranges as async "b"/"e" pairs, and metadata naming the
// process, threads and streams. Written into a TextSink, as a whole (from_memory.hpp) or piece by
// piece while the run goes on (stream.hpp).
//
// Kineto's schema (TraceSchema::kineto, for HTA) is this writer with Kineto's categories and step
// names where nsightkit's documented ones would otherwise change for everyone, and a
// "cuda_runtime" event per launch; what does not conflict (a GPU slice's device, stream and
// correlation args, distributedInfo) is in both.
//
// Size cap (ReportOptions::max_trace_bytes, trace-size=): what is written at the end is formatted
// twice over the same copied data, first only measuring each event's bytes, then for real leaving
// out the oldest events (by end time: ranges still running at the cut stay, as do all metadata) so
// that the file stays under the cap; otherData.size_cap and an instant event at the cut say so.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/fmt_format.hpp>
#include <nsightkit/detail/json.hpp>
#include <nsightkit/detail/process.hpp>
#include <nsightkit/detail/report/counters.hpp>
#include <nsightkit/detail/report/output/text_sink.hpp>
#include <nsightkit/detail/report/path_names.hpp>
#include <nsightkit/detail/report/state.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// Track ids of GPU streams start here, above any OS thread id (Linux pid_max is at most 2^22),
/// and those of the lanes beside them (work overlapping on one stream) here.
inline constexpr std::uint32_t gpu_track_base = 0x40000000u;
inline constexpr std::uint32_t gpu_lane_base = 0x50000000u;

/// One thread's data, copied out under its lock so the writing happens without it.
struct ThreadTraceCopy {
  std::uint32_t tid{0};
  std::size_t index{0};
  std::string thread_name;
  std::vector<TraceEvent> events;
  std::vector<std::string> labels;
  std::vector<Payload> payloads;
  std::vector<std::string> names, paths;  // JSON-escaped, per node
  std::vector<Instant> instants;
  std::vector<std::string> mark_names;
  std::vector<GpuSlice> gpu;
  std::vector<std::string> gpu_labels;  // JSON strings (GpuSlice::label)
  std::vector<SliceKind> gpu_kinds;     // per gpu_labels entry
  std::vector<GpuTrack> tracks;
  bool prepared{false};  // names escaped and events sorted (a copy is written twice under a cap)
};

inline ThreadTraceCopy copy_for_trace(ThreadData& td, std::uint64_t& dropped) {
  ThreadTraceCopy c;
  SpinGuard lock{td.lock};
  c.tid = td.tid;
  c.index = td.index;
  c.thread_name = td.name;
  c.events = td.trace;
  c.labels = td.labels;
  c.payloads = td.payloads;
  c.instants = td.instants;
  c.gpu = td.gpu_trace;
  c.gpu_labels = td.gpu_labels;
  c.gpu_kinds = td.gpu_label_kinds;
  c.tracks = td.gpu_tracks;
  dropped += td.trace_dropped;
  c.names.resize(td.nodes.size());
  c.paths.resize(td.nodes.size());
  for (std::size_t i = 0; i < td.nodes.size(); ++i) {
    Node const& n = td.nodes[i];
    std::string const comp = component(n.domain, n.name);
    c.paths[i] =
        child_path(n.parent != no_node && n.parent < i ? &c.paths[n.parent] : nullptr, comp);
    c.names[i] = comp;
  }
  for (Mark const& m : td.marks) c.mark_names.push_back(component(m.domain, m.name));
  return c;
}

/// A step's name in Kineto's schema: "ProfilerStep#N", N the number that ends its name
/// (CaptureWindow's "step N"), which HTA reads as the iteration; a name without one is kept.
inline std::string profiler_step_name(std::string const& name) {
  std::size_t i = name.size();
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') --i;
  return i == name.size() ? name : "ProfilerStep#" + name.substr(i);
}

/// Kineto's category of a GPU slice: what HTA counts as kernels and memory work.
inline char const* kineto_category(SliceKind k) noexcept {
  switch (k) {
    case SliceKind::kernel: return "kernel";
    case SliceKind::memcpy: return "gpu_memcpy";
    case SliceKind::memset: return "gpu_memset";
    default: return "nsightkit gpu";  // a range's span (events source): no kernel
  }
}

/// Writes the trace, section by section.
class TraceWriter {
 public:
  TraceWriter(TextSink& sink, long pid, std::int64_t origin,
              TraceSchema schema = TraceSchema::chrome) noexcept
      : sink_{&sink},
        out_{&sink.buffer()},
        pid_{pid},
        origin_{origin},
        kineto_{schema == TraceSchema::kineto} {}

  /// Writes into `sink` from now on (a copy of a writer keeps its tracks, flows and busy time).
  void rebind(TextSink& sink) noexcept {
    sink_ = &sink;
    out_ = &sink.buffer();
  }

  /// Streaming (trace/stream.hpp): names of tracks are kept aside for the end of the file, where
  /// no size cap can drop them, instead of written among the events.
  void defer_names(bool on) noexcept { defer_ = on; }
  /// Writes the names kept aside so far (at the end of a streamed trace).
  void deferred_names() {
    std::size_t const at = out_->size();
    *out_ += deferred_;
    measured(at, std::numeric_limits<std::int64_t>::max());
  }
  /// Events written, and the latest end time among them (a streamed piece's bookkeeping).
  [[nodiscard]] std::uint64_t written() const noexcept { return written_; }
  [[nodiscard]] std::int64_t latest() const noexcept { return latest_; }
  /// While measuring: (end time, bytes) of each event so far.
  [[nodiscard]] std::vector<std::pair<std::int64_t, std::size_t>> const& sizes() const noexcept {
    return sizes_;
  }
  /// Whether thread `tid` had events written by this writer.
  [[nodiscard]] bool wrote_for(std::uint32_t tid) const { return tids_.count(tid) != 0; }

  /// The measuring pass: events are formatted, their sizes noted, and nothing is kept.
  void measure() noexcept { measure_ = true; }
  /// Leaves out every event whose end time is at or before `cutoff`.
  void keep_after(std::int64_t cutoff) noexcept { cutoff_ = cutoff; }
  /// Events left out by the cut.
  [[nodiscard]] std::uint64_t cut() const noexcept { return cut_; }

  /// After the measuring pass: the cut that keeps the newest events within `budget` bytes
  /// (metadata first), or the lowest time when all of them fit.
  std::int64_t cutoff_for(std::size_t budget) {
    std::sort(sizes_.begin(), sizes_.end(),
              [](auto const& a, auto const& b) { return a.first > b.first; });
    std::size_t total = 0;
    for (auto const& [key, size] : sizes_) {
      if (total + size > budget) return key;
      total += size;
    }
    return std::numeric_limits<std::int64_t>::min();
  }

  /// An instant event at the cut, saying how many older events were left out.
  void cut_note(std::int64_t cutoff, std::size_t cap, std::uint64_t count) {
    side_track();
    event();
    (*out_) += "{\"ph\":\"i\",\"s\":\"g\",\"name\":";
    json_string((*out_),
                fmt::format("nsightkit: {} older events left out (trace-size cap of {} bytes)",
                            count, cap));
    fmt::format_to(std::back_inserter((*out_)),
                   ",\"cat\":\"nsightkit\",\"pid\":{},\"tid\":{},\"ts\":", pid_, side_tid);
    json_micros((*out_), cutoff - origin_);
    (*out_) += '}';
  }

  /// The header; `distributed` is the distributedInfo member with its comma, or empty.
  void begin(std::string const& process_name, std::string const& distributed = {}) {
    (*out_) += "{\"displayTimeUnit\":\"ns\",";
    (*out_) += distributed;
    (*out_) += "\"traceEvents\":[\n";
    meta_name("process_name", 0, process_name);
  }

  /// A thread's track: its ranges, steps and marks, then its GPU slices on stream tracks; its
  /// name and place unless `named` is false (a streamed piece: they come at the end).
  void thread(ThreadTraceCopy& t, bool named = true) {
    bool const earlier = wrote_for(t.tid);
    if (t.events.empty() && t.instants.empty() && t.gpu.empty() && t.thread_name.empty() &&
        !earlier)
      return;
    if (!t.events.empty() || !t.instants.empty() || !t.gpu.empty()) tids_.insert(t.tid);
    if (!t.prepared) {
      for (auto* v : {&t.names, &t.paths}) {
        for (auto& text : *v) {
          std::string e;
          json_string(e, text);
          text = std::move(e);
        }
      }
      t.prepared = true;
    }
    if (named) {
      meta_name("thread_name", t.tid,
                t.thread_name.empty() ? fmt::format("thread {}", t.tid) : t.thread_name);
      meta_sort(t.tid, t.index);
    }
    ranges(t);
    marks(t);
    gpu_slices(t);
  }

  void start_end(std::vector<StartEndEvent> const& events, std::vector<std::string> const& names) {
    for (StartEndEvent const& e : events) {
      if (!keep(e.end)) continue;
      std::size_t const at = (*out_).size();
      for (int edge = 0; edge < 2; ++edge) {
        event();
        fmt::format_to(std::back_inserter((*out_)),
                       "{{\"ph\":\"{}\",\"name\":", edge == 0 ? "b" : "e");
        json_string((*out_), e.stats < names.size() ? names[e.stats] : std::string{"range"});
        fmt::format_to(std::back_inserter((*out_)),
                       ",\"cat\":\"nsightkit start/end\",\"id\":{},\"pid\":{},\"tid\":{},\"ts\":",
                       e.id, pid_, e.tid);
        json_micros((*out_), (edge == 0 ? e.start : e.end) - origin_);
        (*out_) += '}';
      }
      measured(at, e.end);
      sink_->maybe_flush();
    }
  }

  /// A counter track per device: the share of each time bin the GPU was busy (union of the
  /// slices of every stream and thread). Bins of 1 ms from the first slice seen, twice as wide
  /// whenever the run would need more than 10^4 (busy_fold()).
  void busy_counters() {
    for (auto& [device, b] : busy_) {
      busy_fold(b, std::numeric_limits<std::int64_t>::max());
      std::size_t first = 0, last = b.bins.size();
      while (first < last && b.bins[first] == 0) ++first;
      while (last > first && b.bins[last - 1] == 0) --last;
      if (first == last) continue;
      std::string const name = fmt::format("GPU busy % (device {})", device);
      for (std::size_t i = first; i < last; ++i) {
        std::int64_t const ts = b.base + static_cast<std::int64_t>(i) * b.width;
        if (!keep(ts)) continue;
        side_track();
        std::size_t const at = (*out_).size();
        event();
        (*out_) += "{\"ph\":\"C\",\"name\":";
        json_string((*out_), name);
        fmt::format_to(std::back_inserter((*out_)), ",\"pid\":{},\"tid\":{},\"ts\":", pid_,
                       side_tid);
        json_micros((*out_), ts - origin_);
        fmt::format_to(std::back_inserter((*out_)), ",\"args\":{{\"busy\":{:.1f}}}}}",
                       100.0 * static_cast<double>(b.bins[i]) / static_cast<double>(b.width));
        measured(at, ts);
        sink_->maybe_flush();
      }
    }
  }

  /// Forgets which launches have their arrow (a streamed piece's writer, after each piece: an
  /// arrow is drawn once per piece, so the set stays small in a long run).
  void forget_flows() noexcept { flows_.clear(); }

  /// Counter tracks (counters.hpp): one "C" event per sample, the track named after the counter.
  void counter_tracks(std::vector<CounterSample> const& samples) {
    for (CounterSample const& c : samples) {
      if (!keep(c.t)) continue;
      side_track();
      std::size_t const at = (*out_).size();
      event();
      (*out_) += "{\"ph\":\"C\",\"name\":";
      json_string((*out_), c.name != nullptr ? c.name : "counter");
      fmt::format_to(std::back_inserter((*out_)),
                     ",\"cat\":\"nsightkit counter\",\"pid\":{},\"tid\":{},\"ts\":", pid_,
                     side_tid);
      json_micros((*out_), c.t - origin_);
      fmt::format_to(std::back_inserter((*out_)), ",\"args\":{{\"value\":{}}}}}", c.value);
      measured(at, c.t);
      sink_->maybe_flush();
    }
  }

  void end(std::string const& other_data) {
    (*out_) += "\n],\"otherData\":";
    (*out_) += other_data;
    (*out_) += "}\n";
    sink_->flush();
  }

 private:
  /// The track of the process's counters and notes (no OS thread has id 0), named once.
  static constexpr std::uint32_t side_tid = 0;
  void side_track() {
    if (side_named_) return;
    side_named_ = true;
    meta_name("thread_name", side_tid, "nsightkit counters");
    meta_sort(side_tid, 2000000);
  }

  /// Whether an event that ends at `key` is written (always while measuring).
  bool keep(std::int64_t key) noexcept {
    if (measure_) return true;
    if (key > cutoff_) {
      ++written_;
      latest_ = std::max(latest_, key);
      return true;
    }
    ++cut_;
    return false;
  }

  /// While measuring: notes the size of what was written since `at` and takes it back.
  void measured(std::size_t at, std::int64_t key) {
    if (!measure_) return;
    sizes_.emplace_back(key, (*out_).size() - at);
    (*out_).resize(at);
  }

  void event() {
    if (!first_) (*out_) += ",\n";
    first_ = false;
  }

  void meta_name(char const* what, std::uint32_t tid, std::string const& name) {
    std::size_t const at = (*out_).size();
    event();
    fmt::format_to(
        std::back_inserter((*out_)),
        "{{\"ph\":\"M\",\"name\":\"{}\",\"pid\":{},\"tid\":{},\"ts\":0,\"args\":{{\"name\":", what,
        pid_, tid);
    json_string((*out_), name);
    (*out_) += "}}";
    measured(at, std::numeric_limits<std::int64_t>::max());
    set_aside(at);
  }

  /// While streaming: moves what was written since `at` to the names kept for the end.
  void set_aside(std::size_t at) {
    if (!defer_) return;
    deferred_.append(*out_, at, std::string::npos);
    out_->resize(at);
  }

  void meta_sort(std::uint32_t tid, std::size_t index) {
    std::size_t const at = (*out_).size();
    event();
    fmt::format_to(std::back_inserter((*out_)),
                   "{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{},\"tid\":{},\"ts\":0,"
                   "\"args\":{{\"sort_index\":{}}}}}",
                   pid_, tid, index);
    measured(at, std::numeric_limits<std::int64_t>::max());
    set_aside(at);
  }

  void ranges(ThreadTraceCopy& t) {
    // Nested ranges on one track: parents first at equal start times.
    std::sort(t.events.begin(), t.events.end(), [](TraceEvent const& a, TraceEvent const& b) {
      return a.start != b.start ? a.start < b.start : a.dur > b.dur;
    });
    for (TraceEvent const& e : t.events) {
      if (!keep(e.start + e.dur)) continue;
      std::size_t const at = (*out_).size();
      event();
      (*out_) += "{\"ph\":\"X\",\"name\":";
      bool const step = e.node == no_node;
      if (step) {
        std::string const label =
            e.label < t.labels.size() ? t.labels[e.label] : std::string{"step"};
        json_string((*out_), kineto_ ? profiler_step_name(label) : label);
      } else {
        (*out_) += e.node < t.names.size() ? t.names[e.node] : std::string{"\"?\""};
      }
      (*out_) += step ? ",\"cat\":\"nsightkit step\"" : ",\"cat\":\"nsightkit\"";
      fmt::format_to(std::back_inserter((*out_)), ",\"pid\":{},\"tid\":{},\"ts\":", pid_, t.tid);
      json_micros((*out_), e.start - origin_);
      (*out_) += ",\"dur\":";
      json_micros((*out_), e.dur);
      if (!step && e.node < t.paths.size()) {
        (*out_) += ",\"args\":{\"path\":";
        (*out_) += t.paths[e.node];
        if (e.label < t.payloads.size()) {
          (*out_) += ",\"payload\":";
          json_payload((*out_), t.payloads[e.label]);
        }
        (*out_) += '}';
      }
      (*out_) += '}';
      measured(at, e.start + e.dur);
      sink_->maybe_flush();
    }
  }

  void marks(ThreadTraceCopy const& t) {
    for (Instant const& m : t.instants) {
      if (!keep(m.t)) continue;
      std::size_t const at = (*out_).size();
      event();
      (*out_) += "{\"ph\":\"i\",\"s\":\"t\",\"name\":";
      json_string((*out_),
                  m.mark < t.mark_names.size() ? t.mark_names[m.mark] : std::string{"mark"});
      fmt::format_to(std::back_inserter((*out_)),
                     ",\"cat\":\"nsightkit mark\",\"pid\":{},\"tid\":{},\"ts\":", pid_, t.tid);
      json_micros((*out_), m.t - origin_);
      (*out_) += '}';
      measured(at, m.t);
      sink_->maybe_flush();
    }
  }

  /// The trace track of a thread's GPU track: one per stream, or one per stream and thread when
  /// several threads time work on one stream (so every track holds properly nested slices).
  std::uint32_t stream_track(GpuTrack const& g, std::uint32_t tid) {
    auto same = [&](StreamTrack const& t) {
      return t.stream == g.stream && t.id == g.id && t.device == g.device;
    };
    for (StreamTrack const& t : streams_) {
      if (same(t) && (t.tid == 0 || t.tid == tid)) return t.track;
    }
    bool shared = false;
    for (StreamTrack const& t : streams_) {
      if (same(t)) shared = true;
    }
    std::uint32_t const track = gpu_track_base + static_cast<std::uint32_t>(streams_.size());
    char handle[32];
    std::snprintf(handle, sizeof handle, "%p", g.stream);
    std::string label = g.id >= 0             ? fmt::format("stream {}", g.id)
                        : g.stream == nullptr ? std::string{"default stream"}
                                              : fmt::format("stream {}", handle);
    if (State const* s = state()) {
      std::string const named = s->stream_name(g.stream, g.id, g.device);
      if (!named.empty()) label = fmt::format("{} \"{}\"", label, named);
    }
    label = fmt::format("GPU {} (device {}){}", label, g.device,
                        shared ? fmt::format(", thread {}", tid) : "");
    std::size_t const sort = 1000000 + 100 * (streams_.size() + 1);
    meta_name("thread_name", track, label);
    meta_sort(track, sort);
    streams_.push_back(StreamTrack{g.stream, g.id, g.device, tid, track, std::move(label), sort});
    return track;
  }

  /// The track of a CUPTI slice: its stream's, or, where it overlaps work still running there (a
  /// kernel launched with programmatic dependent launch starts before the one it follows ends),
  /// a lane beside it, so that every track holds properly nested slices. Slices come in order
  /// of their start.
  std::uint32_t lane(std::uint32_t track, std::int64_t start, std::int64_t end) {
    StreamTrack const* st = nullptr;
    for (StreamTrack const& t : streams_) {
      if (t.track == track) st = &t;
    }
    if (st == nullptr || st->id < 0) return track;  // events: spans of nested ranges
    std::vector<Lane>& lanes = lanes_[track];
    if (lanes.empty()) lanes.push_back(Lane{track, std::numeric_limits<std::int64_t>::min()});
    for (Lane& l : lanes) {
      if (l.end <= start) {
        l.end = end;
        return l.track;
      }
    }
    std::uint32_t const id = gpu_lane_base + lane_count_++;
    lanes.push_back(Lane{id, end});
    meta_name("thread_name", id,
              fmt::format("{}, overlapping work {}", st->label, lanes.size() - 1));
    meta_sort(id, st->sort + std::min<std::size_t>(lanes.size() - 1, 99));
    return id;
  }

  void gpu_slices(ThreadTraceCopy& t) {
    struct Out {
      GpuSlice slice;
      std::uint32_t track;
    };
    std::vector<Out> slices;
    slices.reserve(t.gpu.size());
    for (GpuSlice const& g : t.gpu) {
      if (g.track >= t.tracks.size()) continue;
      slices.push_back(Out{g, stream_track(t.tracks[g.track], t.tid)});
    }
    std::sort(slices.begin(), slices.end(), [](Out const& a, Out const& b) {
      return a.slice.start != b.slice.start ? a.slice.start < b.slice.start
                                            : a.slice.dur > b.slice.dur;
    });
    for (Out const& g : slices) {
      busy_add(t.tracks[g.slice.track].device, g.slice.start, g.slice.start + g.slice.dur);
      std::int64_t const key = g.slice.start + g.slice.dur;
      std::uint32_t const track = lane(g.track, g.slice.start, key);
      if (!keep(key)) continue;
      std::size_t const at = (*out_).size();
      GpuTrack const& gt = t.tracks[g.slice.track];
      if (g.slice.launched >= 0 && g.slice.correlation != 0 &&
          flows_.insert(g.slice.correlation).second) {
        if (kineto_) {
          // The launch call as HTA finds a kernel's: same correlation id, on the thread. CUPTI's
          // callback times the call's entry only, so it lasts 0.
          event();
          fmt::format_to(std::back_inserter((*out_)),
                         "{{\"ph\":\"X\",\"name\":\"launch\",\"cat\":\"cuda_runtime\",\"pid\":{},"
                         "\"tid\":{},\"ts\":",
                         pid_, t.tid);
          json_micros((*out_), g.slice.launched - origin_);
          fmt::format_to(std::back_inserter((*out_)),
                         ",\"dur\":0,\"args\":{{\"correlation\":{}}}}}", g.slice.correlation);
        }
        // An arrow from the launch call on the thread's track to the work on the GPU's.
        event();
        fmt::format_to(std::back_inserter((*out_)),
                       "{{\"ph\":\"s\",\"name\":\"launch\",\"cat\":\"nsightkit launch\",\"id\":{},"
                       "\"pid\":{},\"tid\":{},\"ts\":",
                       g.slice.correlation, pid_, t.tid);
        json_micros((*out_), g.slice.launched - origin_);
        (*out_) += '}';
        event();
        fmt::format_to(std::back_inserter((*out_)),
                       "{{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"launch\",\"cat\":\"nsightkit "
                       "launch\",\"id\":{},\"pid\":{},\"tid\":{},\"ts\":",
                       g.slice.correlation, pid_, track);
        json_micros((*out_), g.slice.start - origin_);
        (*out_) += '}';
      }
      event();
      (*out_) += "{\"ph\":\"X\",\"name\":";
      (*out_) += g.slice.label < t.gpu_labels.size() ? t.gpu_labels[g.slice.label]
                 : g.slice.node < t.names.size()     ? t.names[g.slice.node]
                                                     : std::string{"\"?\""};
      SliceKind const kind =
          g.slice.label < t.gpu_kinds.size() ? t.gpu_kinds[g.slice.label] : SliceKind::other;
      fmt::format_to(std::back_inserter((*out_)), ",\"cat\":\"{}\",\"pid\":{},\"tid\":{},\"ts\":",
                     kineto_ ? kineto_category(kind) : "nsightkit gpu", pid_, track);
      json_micros((*out_), g.slice.start - origin_);
      (*out_) += ",\"dur\":";
      json_micros((*out_), g.slice.dur);
      if (g.slice.node < t.paths.size()) {
        (*out_) += ",\"args\":{\"path\":";
        (*out_) += t.paths[g.slice.node];
        fmt::format_to(std::back_inserter((*out_)), ",\"cpu_thread\":{}", t.tid);
        // CUPTI's work: its device, stream id and launch, as Kineto's args name them.
        if (gt.id >= 0) {
          fmt::format_to(std::back_inserter((*out_)),
                         ",\"device\":{},\"stream\":{},\"correlation\":{}", gt.device, gt.id,
                         g.slice.correlation);
        }
        (*out_) += '}';
      }
      (*out_) += '}';
      measured(at, key);
      sink_->maybe_flush();
    }
  }

  /// A device's busy time, folded into bins as the run goes, so that a long run keeps bounded
  /// memory: slices are held until they are `busy_lateness` older than the latest one seen (GPU
  /// work is reported after it ends, not in order), then their union is added to the bins.
  struct Busy {
    std::vector<std::pair<std::int64_t, std::int64_t>> pending;  // (start, end), not folded yet
    std::vector<std::int64_t> bins;                              // busy ns per bin from `base`
    std::int64_t base{0};
    std::int64_t width{1'000'000};
    std::int64_t frontier{std::numeric_limits<std::int64_t>::min()};  // end of the folded union
    std::int64_t latest{std::numeric_limits<std::int64_t>::min()};    // latest end seen
    std::size_t fold_at{4096};  // pending slices that make the next fold (twice those kept)
  };
  static constexpr std::int64_t busy_lateness = 10'000'000'000;  // 10 s
  static constexpr std::size_t busy_max_bins = 10'000;

  void busy_add(int device, std::int64_t start, std::int64_t end) {
    auto const [it, fresh] = busy_.try_emplace(device);
    Busy& b = it->second;
    if (fresh) b.base = start;
    b.pending.emplace_back(start, end);
    b.latest = std::max(b.latest, end);
    if (b.pending.size() >= b.fold_at) {
      busy_fold(b, b.latest - busy_lateness);
      b.fold_at = std::max<std::size_t>(4096, 2 * b.pending.size());
    }
  }

  /// Adds the union of the pending slices that start before `watermark` to the bins.
  static void busy_fold(Busy& b, std::int64_t watermark) {
    std::sort(b.pending.begin(), b.pending.end());
    std::size_t k = 0;
    for (; k < b.pending.size() && b.pending[k].first < watermark; ++k) {
      std::int64_t s = std::max(b.pending[k].first, b.frontier);
      std::int64_t const e = b.pending[k].second;
      if (e <= s) continue;
      if (s < b.base) {  // work that began before the first slice seen: bins on the left
        auto const more = static_cast<std::size_t>((b.base - s + b.width - 1) / b.width);
        b.bins.insert(b.bins.begin(), more, 0);
        b.base -= static_cast<std::int64_t>(more) * b.width;
      }
      b.frontier = e;
      while (s < e) {
        auto const i = static_cast<std::size_t>((s - b.base) / b.width);
        if (i >= b.bins.size()) b.bins.resize(i + 1, 0);
        std::int64_t const bin_end = b.base + static_cast<std::int64_t>(i + 1) * b.width;
        std::int64_t const piece = std::min(e, bin_end) - s;
        b.bins[i] += piece;
        s += piece;
        if (b.bins.size() > busy_max_bins) {  // twice as wide: neighbours merge, exactly
          for (std::size_t j = 0; j < b.bins.size(); j += 2)
            b.bins[j / 2] = b.bins[j] + (j + 1 < b.bins.size() ? b.bins[j + 1] : 0);
          b.bins.resize((b.bins.size() + 1) / 2);
          b.width *= 2;
        }
      }
    }
    b.pending.erase(b.pending.begin(), b.pending.begin() + static_cast<std::ptrdiff_t>(k));
  }

  struct StreamTrack {
    void* stream;
    std::int64_t id;
    int device;
    std::uint32_t tid;  // recording thread when the stream needs one track per thread, else 0
    std::uint32_t track;
    std::string label;
    std::size_t sort;
  };
  struct Lane {
    std::uint32_t track;
    std::int64_t end;  // of the latest slice on it
  };

  TextSink* sink_;
  std::string* out_;
  long pid_;
  std::int64_t origin_;
  bool kineto_;
  bool first_{true};
  bool defer_{false};
  std::string deferred_;  // names set aside while streaming
  std::uint64_t written_{0};
  std::int64_t latest_{std::numeric_limits<std::int64_t>::min()};
  std::set<std::uint32_t> tids_;  // threads with events written
  std::vector<StreamTrack> streams_;
  std::map<std::uint32_t, std::vector<Lane>> lanes_;  // per CUPTI stream track
  std::uint32_t lane_count_{0};
  std::map<int, Busy> busy_;       // per device
  std::set<std::uint32_t> flows_;  // correlation ids that have their arrow
  bool measure_{false};
  bool side_named_{false};
  std::int64_t cutoff_{std::numeric_limits<std::int64_t>::min()};
  std::uint64_t cut_{0};
  std::vector<std::pair<std::int64_t, std::size_t>> sizes_;  // (end time, bytes) while measuring
};

/// Writes the whole trace of the report's data so far into `sink`.
}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
