// Internal: each launching thread's GPU work on its way to the paths — activities parked with
// their launch in the thread's ThreadWork until a settle, when a run [seq_begin, seq_end) of the
// thread's launch sequence becomes the work of one call of a path (account), a replayed graph's
// work one call of each captured path (account_replays); device and stream totals keep the union
// of their busy intervals (Totals). Plain data and functions over it: attribution.hpp's source
// feeds it and holds the mutex.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/cupti/correlation.hpp>
#include <nsightkit/detail/json.hpp>
#include <nsightkit/detail/report/gpu_source.hpp>
#include <nsightkit/detail/report/state.hpp>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
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

/// The attribution's data for one recording thread.
struct AttributionThread final : ThreadGpu {
  struct Open {
    std::uint32_t node;
    std::uint32_t seq_begin;
    void* stream{nullptr};  // the thread's current stream when the range began
    bool owns{false};       // the range made `stream` current (its parent had another one)
    std::uint64_t key{0};   // owns: the stream as activity records name it (stream_key)
    std::int64_t start{0};  // owns: when it began
  };
  struct Instance {
    std::uint32_t node;
    std::uint32_t seq_begin;
    std::uint32_t seq_end;
  };
  /// A range that made a stream current, ended: work other threads launch on that stream
  /// outside any range of theirs (a library's own launch thread) is counted for it.
  struct Owned {
    std::uint64_t key;
    std::uint32_t node;
    std::uint32_t seq;  // the launch sequence number the range reserved for such work
    std::uint64_t generation;
    std::int64_t start, end;
  };
  std::vector<Open> open;        // under the thread's lock; the launch callback reads it on the
                                 // owning thread (which alone writes it)
  std::vector<Instance> closed;  // ranges that ended having launched work; under the lock
  std::vector<Owned> owned;      // under the lock; taken by every settle
  std::atomic<std::uint32_t> seq{0};         // launches noted on this thread; the owner writes it
  std::uint32_t index{0};                    // ThreadData::index
  std::uint64_t const* generation{nullptr};  // ThreadData::stack_generation (owner-only)
  ThreadData const* td{nullptr};             // for the names of open ranges (owner-only reads)
  int capture_base{-1};  // open ranges when this thread's stream capture began, or -1
};

/// An activity waiting, with its launch, to be settled.
struct Parked {
  GpuActivity activity;
  Launch launch;
  std::uint32_t replay{no_node};  // a graph node's work: the id of its captured relative path
  std::uint32_t target{no_node};  // ... and the node of the replaying thread it belongs to
  bool delegated{false};          // launched outside any range, given to its stream's owner
};
/// One component of a captured graph's relative path.
struct Component {
  std::string domain;
  std::string name;
};

/// Captured graphs' relative paths, interned: an id per distinct path.
class CapturedPaths {
 public:
  std::uint32_t intern(std::vector<Component> path) {
    std::string key;
    for (Component const& c : path) {
      key += c.domain;
      key += '\x1f';
      key += c.name;
      key += '\x1e';
    }
    auto it = ids_.find(key);
    if (it != ids_.end()) return it->second;
    auto const id = static_cast<std::uint32_t>(paths_.size());
    paths_.push_back(std::move(path));
    ids_.emplace(std::move(key), id);
    return id;
  }
  [[nodiscard]] std::size_t size() const noexcept { return paths_.size(); }
  std::vector<Component> const& operator[](std::uint32_t id) const { return paths_[id]; }

 private:
  std::vector<std::vector<Component>> paths_;
  std::unordered_map<std::string, std::uint32_t> ids_;
};

/// The part of one call's GPU work settled so far.
struct Partial {
  GpuWork work;
  std::int64_t first{0}, last{0};
  std::int64_t frontier{INT64_MIN}, self_frontier{INT64_MIN};
  bool any{false};
  std::vector<std::pair<std::int64_t, std::int64_t>> intervals, self_intervals;  // replays
};

/// One recording thread's books.
struct ThreadWork {
  std::uint64_t generation{0};
  std::vector<Parked> parked;
  std::vector<GpuWork> nodes;
  std::map<std::pair<std::uint32_t, std::uint32_t>, Partial> partials;  // (node, seq_begin)
  std::vector<AttributionThread::Instance> deferred;                    // ended, not yet settled
  std::uint32_t arrived{0};  // 1 + highest launch sequence number whose work arrived
};

/// A device's or a stream's totals.
struct Totals {
  std::uint64_t kernels{0}, copies{0};
  std::int64_t busy{0}, first{0}, last{0}, frontier{INT64_MIN};
  bool any{false};
  std::vector<std::pair<std::int64_t, std::int64_t>> pending;
  // Devices only: kernels, copies and their union apart, for copy/compute overlap.
  struct Union {
    std::int64_t busy{0}, frontier{INT64_MIN};
    std::vector<std::pair<std::int64_t, std::int64_t>> pending;
    void settle() {
      busy += union_length(pending, frontier);
      pending.clear();
    }
  } kernel, copy, kernel_or_copy;
};

/// Where a live device allocation was attributed.
struct Allocation {
  std::uint32_t thread, node;
  std::uint64_t generation;
  std::uint64_t bytes;
};

/// What a trace slice of `a` is named after: its kernel (by name id), its copy's direction, or
/// a memset; 0 for anything else.
inline std::uint64_t label_key(GpuActivity const& a) noexcept {
  switch (a.kind) {
    case GpuActivity::Kind::kernel: return (std::uint64_t{1} << 32) | a.name;
    case GpuActivity::Kind::memcpy: return (std::uint64_t{2} << 32) | static_cast<unsigned>(a.copy);
    case GpuActivity::Kind::memset: return std::uint64_t{3} << 32;
    default: return 0;
  }
}

/// One GPU activity as a slice of the trace, on the track of its device and stream.
struct Slice {
  std::int64_t start, dur, launched;
  std::uint32_t node, device, stream, correlation;
  std::uint64_t label;  // label_key() of the activity
};

/// The JSON string each label key names, made once per process (kernel names demangled).
class SliceLabels {
 public:
  /// Points `out[key]` at the text of every labelled slice; `kernel_names` are the source's
  /// interned names, guarded by `mutex`. The texts stay put until destruction.
  void resolve(std::vector<Slice> const& slices, std::vector<std::string> const& kernel_names,
               std::mutex& mutex, std::unordered_map<std::uint64_t, std::string const*>& out) {
    std::lock_guard<std::mutex> lock{mutex};
    for (Slice const& g : slices) {
      if (g.label == 0 || out.count(g.label) != 0) continue;
      auto [it, added] = texts_.try_emplace(g.label);
      if (added) json_string(it->second, plain(g.label, kernel_names));
      out.emplace(g.label, &it->second);
    }
  }

 private:
  static std::string plain(std::uint64_t key, std::vector<std::string> const& kernel_names) {
    auto const low = static_cast<std::uint32_t>(key);
    switch (key >> 32) {
      case 1: return low < kernel_names.size() ? demangle(kernel_names[low].c_str()) : "kernel";
      case 2:
        // Nsight Systems' and Kineto's spelling: HTA tells memory work by these prefixes.
        return low == static_cast<unsigned>(CopyKind::h2d)   ? "Memcpy HtoD"
               : low == static_cast<unsigned>(CopyKind::d2h) ? "Memcpy DtoH"
               : low == static_cast<unsigned>(CopyKind::d2d) ? "Memcpy DtoD"
                                                             : "Memcpy";
      default: return "Memset";
    }
  }
  std::unordered_map<std::uint64_t, std::string> texts_;
};

/// The index in td.gpu_labels of the slice label `key`, no_node for none. Under td's lock.
inline std::uint32_t thread_label(
    ThreadData& td, std::uint64_t key,
    std::unordered_map<std::uint64_t, std::string const*> const& text) {
  auto const t = text.find(key);
  if (key == 0 || t == text.end()) return no_node;
  auto const [it, added] =
      td.gpu_label_of.try_emplace(key, static_cast<std::uint32_t>(td.gpu_labels.size()));
  if (added) {
    td.gpu_labels.push_back(*t->second);
    td.gpu_label_kinds.push_back(static_cast<SliceKind>(key >> 32));
  }
  return it->second;
}

/// The settled work of `node` on the thread.
inline GpuWork& node_work(ThreadWork& tw, std::uint32_t node) {
  if (tw.nodes.size() <= node) tw.nodes.resize(std::size_t{node} + 1);
  return tw.nodes[node];
}

/// Counts an activity in a device's (`device`) or a stream's totals.
inline void total(Totals& t, GpuActivity const& a, bool device) {
  (a.kind == GpuActivity::Kind::kernel ? t.kernels : t.copies) += 1;
  t.first = t.any ? std::min(t.first, a.start) : a.start;
  t.last = t.any ? std::max(t.last, a.end) : a.end;
  t.any = true;
  t.pending.emplace_back(a.start, a.end);
  if (!device || a.kind == GpuActivity::Kind::memset) return;
  (a.kind == GpuActivity::Kind::kernel ? t.kernel : t.copy).pending.emplace_back(a.start, a.end);
  t.kernel_or_copy.pending.emplace_back(a.start, a.end);
}

/// Adds one activity to a call's part: its time bounds and its work. `mine`: the call's own range
/// launched it (not a range nested inside).
inline void add_to_call(Partial& p, Parked const& r, bool mine) {
  GpuActivity const& a = r.activity;
  p.first = p.any ? std::min(p.first, a.start) : a.start;
  p.last = p.any ? std::max(p.last, a.end) : a.end;
  p.any = true;
  GpuWork& w = p.work;
  if (a.kind == GpuActivity::Kind::kernel) {
    ++w.kernels;
    if (mine) ++w.self_kernels;
    w.kernel_ns += a.end - a.start;
    w.add_kernel(a.name, a.end - a.start);
    if (r.delegated) {
      ++w.delegated_kernels;
      w.delegated_kernel_ns += a.end - a.start;
    }
  } else if (a.kind == GpuActivity::Kind::memcpy) {
    w.copies[static_cast<int>(a.copy)].add(a);
  } else {
    w.memsets.add(a);
  }
  w.latency.add(std::max<std::int64_t>(0, a.start - r.launch.entered), 1024);
  w.add_stream(a.device, a.stream);
}

/// Adds the parked work [lo, hi) (sorted by seq) to the call of `node` that began at
/// `seq_begin`; `final` when the call has ended.
inline void account(ThreadWork& tw, std::uint32_t node, std::uint32_t seq_begin, Parked const* lo,
                    Parked const* hi, bool final, std::vector<std::uint8_t>& own,
                    Parked const* base) {
  auto const key = std::make_pair(node, seq_begin);
  auto found = tw.partials.find(key);
  if (lo == hi && found == tw.partials.end()) return;
  Partial& p = found != tw.partials.end() ? found->second : tw.partials[key];
  std::vector<std::pair<std::int64_t, std::int64_t>> all, self;
  for (Parked const* r = lo; r != hi; ++r) {
    GpuActivity const& a = r->activity;
    bool const mine = r->launch.node == node;
    if (mine) own[static_cast<std::size_t>(r - base)] = 1;
    add_to_call(p, *r, mine);
    all.emplace_back(a.start, a.end);
    if (mine) self.emplace_back(a.start, a.end);
    if (a.legacy && mine) ++p.work.legacy;
  }
  p.work.busy_ns += union_length(all, p.frontier);
  p.work.self_busy_ns += union_length(self, p.self_frontier);
  if (!final) return;
  GpuWork& w = node_work(tw, node);
  if (p.any) {
    p.work.span_ns = p.last - p.first;
    p.work.calls = 1;
  }
  w.merge(p.work);
  tw.partials.erase(key);
}

/// Replayed graph work: per replay (one graph launch), the union of the intervals of each
/// captured path and of every ancestor, as one call of each. Under the source's mutex.
inline void account_replays(ThreadWork& tw, std::vector<Parked> const& replayed,
                            std::vector<std::uint32_t> const& parents, std::vector<Slice>& slices) {
  if (replayed.empty()) return;
  std::map<std::uint32_t, std::vector<Parked const*>> by_launch;
  for (Parked const& p : replayed) by_launch[p.activity.correlation].push_back(&p);
  for (auto const& [correlation, records] : by_launch) {
    (void)correlation;
    std::map<std::uint32_t, Partial> calls;  // node -> this replay's part
    for (Parked const* r : records) {
      GpuActivity const& a = r->activity;
      slices.push_back(Slice{a.start, a.end - a.start, r->launch.entered, r->target, a.device,
                             a.stream, 0, label_key(a)});
      for (std::uint32_t n = r->target; n != no_node;
           n = n < parents.size() ? parents[n] : no_node) {
        Partial& c = calls[n];
        bool const mine = n == r->target;
        add_to_call(c, *r, mine);
        c.intervals.emplace_back(a.start, a.end);
        if (mine) c.self_intervals.emplace_back(a.start, a.end);
      }
    }
    for (auto& [node, c] : calls) {
      std::int64_t frontier = INT64_MIN, self_frontier = INT64_MIN;
      c.work.busy_ns = union_length(c.intervals, frontier);
      c.work.self_busy_ns = union_length(c.self_intervals, self_frontier);
      c.work.span_ns = c.last - c.first;
      c.work.calls = 1;
      node_work(tw, node).merge(c.work);
    }
  }
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
