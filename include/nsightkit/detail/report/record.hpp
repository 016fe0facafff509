// Internal: the report's recording side — the RangeSink that turns every nsightkit range, mark and
// thread name into the calling thread's path nodes, trace events and GPU-source calls.
#pragma once

#include <nsightkit/attributes.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/detail/capture_state.hpp>
#include <nsightkit/detail/report/gpu_source.hpp>
#include <nsightkit/detail/report/state.hpp>
#include <nsightkit/detail/sinks.hpp>
#include <nsightkit/detail/thread.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// Drops the owner's open frames when reset()/enable() moved the generation. Under the lock.
/// Returns false when it dropped them.
inline bool sync_stack(State& s, ThreadData& td) {
  if (td.stack_generation == td.generation) return true;
  if (GpuSource* src = s.source.load(std::memory_order_acquire)) src->drop_open(s, td);
  td.open_labels.clear();
  td.stack.clear();
  td.root_last_child = no_node;
  td.stack_generation = td.generation;
  return false;
}

inline bool same_domain(Node const& n, char const* domain) noexcept {
  return n.domain_key == domain || n.domain == domain;
}

/// Lengths first, then the bytes: std::string's operator== with a string_view goes through
/// compare(), several times the instructions for the short names ranges have.
inline bool same_name(Node const& n, std::string_view name) noexcept {
  return n.name.size() == name.size() &&
         (name.empty() || std::memcmp(n.name.data(), name.data(), name.size()) == 0);
}

/// The node of path (parent, domain, name), created on first sight. Under the lock.
inline std::uint32_t find_node(State& s, ThreadData& td, std::uint32_t parent, char const* domain,
                               std::string_view name) {
  std::uint64_t const h = path_hash(parent, name);
  std::uint32_t found = td.index_by_path.find(h, [&](std::uint32_t i) {
    Node const& n = td.nodes[i];
    return n.parent == parent && same_name(n, name) && same_domain(n, domain);
  });
  if (found != no_node) return found;
  if (td.nodes.size() >= s.max_paths.load(std::memory_order_relaxed)) {
    // Past the limit every new path of a parent is counted under one "(other paths)" child.
    ++td.paths_over_limit;
    std::uint64_t const oh = path_hash(parent, other_paths_name);
    found = td.index_by_path.find(oh, [&](std::uint32_t i) {
      return td.nodes[i].parent == parent && td.nodes[i].name == other_paths_name;
    });
    if (found != no_node) return found;
    name = other_paths_name;
    domain = "";
  }
  Node n;
  n.parent = parent;
  n.depth = parent < td.nodes.size() ? td.nodes[parent].depth + 1 : 1;
  n.hash = path_hash(parent, name);
  n.domain_key = domain;
  n.domain = domain;
  n.name = std::string{name};
  auto const id = static_cast<std::uint32_t>(td.nodes.size());
  td.nodes.push_back(std::move(n));
  td.index_by_path.insert(td.nodes.back().hash, id);
  return id;
}

/// The innermost open frame that is a path component or a step (ranges of domains left out are
/// skipped), or null.
inline Frame* enclosing(ThreadData& td) noexcept {
  for (std::size_t i = td.stack.size(); i > 0; --i) {
    if (!td.stack[i - 1].ignored) return &td.stack[i - 1];
  }
  return nullptr;
}

/// True when ranges of `domain` form paths (ReportOptions::domains; "default" names NVTX's
/// unnamed domain).
inline bool domain_counted(State const& s, char const* domain) noexcept {
  std::vector<std::string> const* list = s.domains.load(std::memory_order_acquire);
  if (list == nullptr) return true;
  std::string_view const d = domain == nullptr ? std::string_view{} : std::string_view{domain};
  for (std::string const& n : *list) {
    if (d.empty() ? n == "default" : n == d) return true;
  }
  return false;
}

/// The node a new non-step range of (domain, name) aggregates into under the top frame. Past
/// the depth limit, the first range is one "(deeper ranges)" row (f.limit) and the ranges inside
/// it are not aggregated at all (f.aggregated false). Under the lock.
inline std::uint32_t child_node(State& s, ThreadData& td, RangeBegin const& b, Frame& f) {
  Frame const* top = enclosing(td);
  bool const root = top == nullptr;
  if (top != nullptr && (top->limit || !top->aggregated)) {  // inside a range past the limit
    f.aggregated = false;
    ++td.depth_over_limit;
    return top->node;
  }
  std::uint32_t const parent = root ? no_node : top->node;
  std::uint32_t const depth = root ? 0 : top->depth;
  if (depth >= s.max_depth.load(std::memory_order_relaxed)) {
    f.limit = true;
    ++td.depth_over_limit;
    return find_node(s, td, parent, "", deeper_ranges_name);
  }
  // Predicted node first: the sibling that followed the previous child last time.
  std::uint32_t const prev = root ? td.root_last_child : top->last_child;
  std::size_t const n = td.nodes.size();
  std::uint32_t const guess = prev < n            ? td.nodes[prev].next_hint
                              : parent < n        ? td.nodes[parent].first_hint
                              : parent == no_node ? td.root_first_hint
                                                  : no_node;
  if (guess < n && td.nodes[guess].parent == parent && same_name(td.nodes[guess], b.name) &&
      same_domain(td.nodes[guess], b.domain)) {
    return guess;
  }
  std::uint32_t const node = find_node(s, td, parent, b.domain, b.name);
  if (prev < n) {
    td.nodes[prev].next_hint = node;
  } else if (parent < n) {
    td.nodes[parent].first_hint = node;
  } else if (parent == no_node) {
    td.root_first_hint = node;
  }
  return node;
}

/// True when ranges beginning now are aggregated (not limited to captured steps, or inside one).
inline bool counting(State const& s) noexcept {
  return !s.captured_only.load(std::memory_order_relaxed) || capture_active();
}

inline void Sink::on_push(RangeBegin const& b) noexcept {
  ThreadData* td = thread_data(s_);
  if (td == nullptr) return;
  bool const counted = counting(s_);
  bool const step = b.attributes != nullptr && is_step_range(*b.attributes);
  bool const ignored = !step && !domain_counted(s_, b.domain);
  GpuContext const gpu = current_gpu;
  OwnerGuard lock{td->lock};
  NSIGHTKIT_DETAIL_TRY {
    sync_stack(s_, *td);
    Frame f;
    f.domain = b.domain;
    if (ignored) {  // only so that its pop finds it
      f.ignored = true;
      td->stack.emplace_back(f);
      return;
    }
    f.counted = counted;
    f.step = step;
    f.payload = b.attributes->payload();
    if (step) {  // a step carries its enclosing path node: steps are not path components
      if (Frame const* top = enclosing(*td)) {
        f.node = top->node;
        f.depth = top->depth;
        f.aggregated = top->aggregated && !top->limit;
      }
      if (counted) {
        f.label = static_cast<std::uint32_t>(td->open_labels.size());
        td->open_labels.emplace_back(b.name.data(), b.name.size());
      }
    } else {
      f.node = child_node(s_, *td, b, f);
      f.depth = f.node < td->nodes.size() ? td->nodes[f.node].depth : 0;
    }
    Frame& top = td->stack.emplace_back(f);  // before GPU work: the pop must find its frame
    if (counted && !step && top.aggregated) {
      if (GpuSource* src = s_.source.load(std::memory_order_relaxed)) src->begin(s_, *td, top, gpu);
    }
    top.start = s_.now();  // last: the bookkeeping above is not part of the range
  }
  NSIGHTKIT_DETAIL_CATCH(...) {
    ++td->generation;  // out of memory: forget this thread's open ranges rather than mismatch them
  }
}

inline void Sink::on_pop(char const* domain) noexcept {
  std::int64_t const now = s_.now();
  ThreadData* td = thread_data(s_);
  if (td == nullptr) return;
  OwnerGuard lock{td->lock};
  NSIGHTKIT_DETAIL_TRY {
    if (!sync_stack(s_, *td)) return;
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
    Frame const& f = td->stack.back();  // popped at the end: nothing below pushes a frame
    if (f.ignored) {
      td->stack.pop_back();
      return;
    }
    GpuSource* const src = s_.source.load(std::memory_order_relaxed);
    if (f.counted) {
      std::int64_t const dur = now > f.start ? now - f.start : 0;
      std::size_t const cap = s_.exact_samples.load(std::memory_order_relaxed);
      ++td->ranges;
      if (f.step) {
        td->steps.add(dur, cap);
        td->step_series.add(f.start, dur);
      } else if (f.aggregated && f.node < td->nodes.size()) {
        td->nodes[f.node].cpu.add(dur, cap);
      }
      if (s_.trace.load(std::memory_order_relaxed) && (f.step || f.aggregated)) {
        if (td->trace.size() < s_.max_trace_events.load(std::memory_order_relaxed)) {
          std::uint32_t label = no_node;
          if (f.step && f.label < td->open_labels.size()) {
            label = static_cast<std::uint32_t>(td->labels.size());
            td->labels.push_back(std::move(td->open_labels[f.label]));
          } else if (!f.step && f.payload.kind() != PayloadKind::none) {
            label = static_cast<std::uint32_t>(td->payloads.size());
            td->payloads.push_back(f.payload);
          }
          td->trace.push_back(TraceEvent{f.start, dur, f.step ? no_node : f.node, label});
          if (td->trace.size() == stream_batch(s_)) {
            if (auto const wake = s_.trace_wake.load(std::memory_order_relaxed)) wake();
          }
        } else {
          ++td->trace_dropped;
        }
      }
      if (f.gpu != no_node && src != nullptr) src->end(s_, *td, f);
    }
    if (f.label != no_node && f.label + 1 == td->open_labels.size()) td->open_labels.pop_back();
    bool const child = !f.step && f.aggregated;
    std::uint32_t const node = f.node;
    td->stack.pop_back();
    if (child) {
      Frame* const parent = enclosing(*td);
      (parent == nullptr ? td->root_last_child : parent->last_child) = node;
    }
    if (td->stack.empty()) {  // drop slots left behind by frames that ended out of order
      td->open_labels.clear();
      if (src != nullptr) src->drop_open(s_, *td);
    }
    if (src != nullptr) src->poll(s_, *td);
  }
  NSIGHTKIT_DETAIL_CATCH(...) {
    ++td->generation;  // out of memory: forget this thread's open ranges rather than mismatch them
  }
}

/// The key of a (domain, name) pair in the maps of marks and start/end ranges.
inline std::string key(std::string_view domain, std::string_view name) {
  std::string k{domain};
  k += '\x1f';
  k += name;
  return k;
}

inline void Sink::on_mark(RangeBegin const& b) noexcept {
  if (!counting(s_) || !domain_counted(s_, b.domain)) return;
  std::int64_t const now = s_.now();
  ThreadData* td = thread_data(s_);
  if (td == nullptr) return;
  OwnerGuard lock{td->lock};
  NSIGHTKIT_DETAIL_TRY {
    std::string k = key(b.domain, b.name);
    auto it = td->mark_index.find(k);
    bool other = false;
    if (it == td->mark_index.end() &&
        td->marks.size() >= s_.max_paths.load(std::memory_order_relaxed)) {
      // Distinct mark names are capped like paths; the rest are counted together.
      ++td->marks_over_limit;
      other = true;
      k = key("", other_marks_name);
      it = td->mark_index.find(k);
    }
    std::uint32_t m;
    if (it == td->mark_index.end()) {
      m = static_cast<std::uint32_t>(td->marks.size());
      td->marks.push_back(Mark{other ? std::string{} : std::string{b.domain},
                               std::string{other ? other_marks_name : b.name}, 0});
      td->mark_index.emplace(std::move(k), m);
    } else {
      m = it->second;
    }
    ++td->marks[m].count;
    if (s_.trace.load(std::memory_order_relaxed)) {
      if (td->instants.size() < s_.max_trace_events.load(std::memory_order_relaxed)) {
        td->instants.push_back(Instant{now, m});
      } else {
        ++td->trace_dropped;
      }
    }
  }
  NSIGHTKIT_DETAIL_CATCH(...) {}
}

inline void Sink::on_thread_name(std::string_view name) noexcept {
  ThreadData* td = thread_data(s_);
  if (td == nullptr) return;
  OwnerGuard lock{td->lock};
  NSIGHTKIT_DETAIL_TRY { td->name.assign(name.data(), name.size()); }
  NSIGHTKIT_DETAIL_CATCH(...) {}
}

/// Names OS thread `tid`: its data now if it recorded already, and when it first records.
inline void name_thread(State& s, std::uint32_t tid, std::string_view name) noexcept {
  NSIGHTKIT_DETAIL_TRY {
    std::lock_guard<std::mutex> lock{s.mutex};
    auto it = s.thread_names.find(tid);
    if (it != s.thread_names.end()) {
      it->second.assign(name.data(), name.size());
    } else if (s.thread_names.size() < max_resource_names) {
      s.thread_names.emplace(tid, std::string{name});
    }
    // The latest thread with that id (an id is reused only after its thread ended).
    for (auto t = s.threads.rbegin(); t != s.threads.rend(); ++t) {
      if ((*t)->tid != tid) continue;
      SpinGuard tl{(*t)->lock};
      (*t)->name.assign(name.data(), name.size());
      break;
    }
  }
  NSIGHTKIT_DETAIL_CATCH(...) {}
}

/// Names a CUDA stream; the GPU source tells its key when it can (now, or at the snapshot).
inline void name_stream(State& s, void const* stream, std::string_view name) noexcept {
  NSIGHTKIT_DETAIL_TRY {
    std::uint64_t key = 0;
    GpuSource* const src = s.source.load(std::memory_order_acquire);
    bool const keyed = src != nullptr && src->stream_key(const_cast<void*>(stream), key);
    std::lock_guard<std::mutex> lock{s.stream_names_mutex};
    for (StreamName& n : s.stream_names) {
      if (n.handle == stream) {
        n.name.assign(name.data(), name.size());
        if (keyed) {
          n.key = key;
          n.keyed = true;
        }
        return;
      }
    }
    if (s.stream_names.size() < max_resource_names)
      s.stream_names.push_back(StreamName{stream, key, keyed, std::string{name}});
  }
  NSIGHTKIT_DETAIL_CATCH(...) {}
}

inline void Sink::on_stream_name(void const* stream, std::string_view name) noexcept {
  name_stream(s_, stream, name);
}

inline void Sink::on_start(std::uint64_t id, RangeBegin const& b) noexcept {
  if (!counting(s_) || !domain_counted(s_, b.domain)) return;
  std::uint32_t const tid = os_thread_id();
  NSIGHTKIT_DETAIL_TRY {
    OpenStartEnd open{b.domain, std::string{b.name}, 0, tid};
    std::lock_guard<std::mutex> lock{s_.se_mutex};
    if (s_.se_open.size() >= max_open_start_end) return;
    open.start = s_.now();
    s_.se_open.emplace(id, std::move(open));
  }
  NSIGHTKIT_DETAIL_CATCH(...) {}
}

inline void Sink::on_end(std::uint64_t id) noexcept {
  std::int64_t const now = s_.now();
  NSIGHTKIT_DETAIL_TRY {
    std::lock_guard<std::mutex> lock{s_.se_mutex};
    auto it = s_.se_open.find(id);
    if (it == s_.se_open.end()) return;
    OpenStartEnd const& o = it->second;
    std::string k = key(o.domain, o.name);
    auto si = s_.se_index.find(k);
    bool other = false;
    if (si == s_.se_index.end() &&
        s_.se_stats.size() >= s_.max_paths.load(std::memory_order_relaxed)) {
      // Distinct names are capped like paths (a name per request would grow without bound).
      ++s_.se_over_limit;
      other = true;
      k = key("", other_start_end_name);
      si = s_.se_index.find(k);
    }
    std::uint32_t idx;
    if (si == s_.se_index.end()) {
      idx = static_cast<std::uint32_t>(s_.se_stats.size());
      s_.se_stats.push_back(other ? StartEndStats{{}, std::string{other_start_end_name}, {}}
                                  : StartEndStats{o.domain, o.name, Distribution{}});
      s_.se_index.emplace(std::move(k), idx);
    } else {
      idx = si->second;
    }
    std::int64_t const dur = now > o.start ? now - o.start : 0;
    s_.se_stats[idx].time.add(dur, s_.exact_samples.load(std::memory_order_relaxed));
    if (s_.trace.load(std::memory_order_relaxed)) {
      if (s_.se_trace.size() < s_.max_trace_events.load(std::memory_order_relaxed)) {
        s_.se_trace.push_back(StartEndEvent{id, o.start, o.start + dur, o.tid, idx});
        // Streamed like the threads' events: the worker takes them in its next piece.
        if (s_.se_trace.size() == stream_batch(s_)) {
          if (auto wake = s_.trace_wake.load(std::memory_order_acquire)) wake();
        }
      } else {
        ++s_.se_dropped;
      }
    }
    s_.se_open.erase(it);
  }
  NSIGHTKIT_DETAIL_CATCH(...) {}
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
