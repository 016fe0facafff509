// Internal: the report's reading side — merging every thread's data into a ReportSnapshot.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/process.hpp>
#include <nsightkit/detail/report/gpu_source.hpp>
#include <nsightkit/detail/report/path_names.hpp>
#include <nsightkit/detail/report/record.hpp>
#include <nsightkit/detail/report/state.hpp>
#include <nsightkit/detail/report/stats.hpp>
#include <nsightkit/detail/report/step_series.hpp>
#include <nsightkit/detail/thread.hpp>
#include <nsightkit/report_types.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

inline TimeStats time_stats(Distribution const& d) {
  TimeStats t;
  t.count = d.count();
  t.total_ns = d.total();
  t.mean_ns = d.mean();
  t.min_ns = d.min();
  t.max_ns = d.max();
  t.p50_ns = d.percentile(50.0);
  t.p95_ns = d.percentile(95.0);
  t.exact = d.exact();
  return t;
}

/// A path node as the snapshot copies it out of a thread (or merges it over threads).
struct NodeCopy {
  std::uint32_t parent{no_node};
  std::string domain;
  std::string name;
  Distribution cpu;
  Distribution gpu;
  GpuWork work;
};

/// Kernel name ids to printable names (the GPU source interns them).
using KernelNames = std::function<std::string(std::uint32_t)>;

/// The public form of a path's GPU work.
inline GpuWorkStats work_stats(GpuWork const& w, KernelNames const& names) {
  GpuWorkStats st;
  st.kernels = w.kernels;
  st.self_kernels = w.self_kernels;
  st.kernel_ns = w.kernel_ns;
  st.busy_ns = w.busy_ns;
  st.self_busy_ns = w.self_busy_ns;
  st.span_ns = w.span_ns;
  st.idle_ns = std::max<std::int64_t>(0, w.span_ns - w.busy_ns);
  st.calls_with_work = w.calls;
  st.launch_latency = time_stats(w.latency);
  st.h2d = w.copies[static_cast<int>(CopyKind::h2d)].stats();
  st.d2h = w.copies[static_cast<int>(CopyKind::d2h)].stats();
  st.d2d = w.copies[static_cast<int>(CopyKind::d2d)].stats();
  st.other_copies = w.copies[static_cast<int>(CopyKind::other)].stats();
  st.memsets = w.memsets.stats();
  st.streams = static_cast<std::uint32_t>(w.streams.size());
  std::vector<GpuWork::Kernel> by_ns = w.by_name;
  std::sort(by_ns.begin(), by_ns.end(), [](GpuWork::Kernel const& a, GpuWork::Kernel const& b) {
    return a.ns != b.ns ? a.ns > b.ns : a.name < b.name;
  });
  for (std::size_t i = 0; i < by_ns.size() && i < 5; ++i) {
    st.top_kernels.push_back(
        KernelStats{names ? names(by_ns[i].name) : std::string{"?"}, by_ns[i].count, by_ns[i].ns});
  }
  st.allocations = w.allocations;
  st.allocated_bytes = w.allocated_bytes;
  st.freed_bytes = w.freed_bytes;
  st.peak_bytes = w.peak_bytes;
  st.legacy_stream_work = w.legacy;
  st.delegated_kernels = w.delegated_kernels;
  st.delegated_kernel_ns = w.delegated_kernel_ns;
  std::int64_t longest = -1;
  for (GpuWork::Sync const& x : w.syncs) {
    st.sync_calls += x.count;
    st.sync_ns += x.ns;
    if (x.ns > longest) {
      longest = x.ns;
      st.sync_api = names ? names(x.api) : std::string{"?"};
    }
  }
  return st;
}

/// Appends `nodes` (parents before children) as rows in tree order: siblings by total time,
/// descending; nodes whose whole subtree recorded nothing are left out.
inline void emit_tree(std::vector<NodeCopy> const& nodes, std::uint32_t thread,
                      std::vector<PathStats>& out, KernelNames const& names = {}) {
  std::size_t const n = nodes.size();
  std::vector<std::vector<std::uint32_t>> children(n);
  std::vector<std::uint32_t> roots;
  std::vector<std::uint64_t> subtree(n, 0);
  // A node counts when it ran on the CPU or has GPU work (a replayed graph's module rows have
  // GPU work only).
  for (std::size_t i = 0; i < n; ++i)
    subtree[i] = nodes[i].cpu.count() + (nodes[i].work.empty() ? 0 : 1);
  for (std::size_t i = n; i-- > 0;) {
    std::uint32_t const p = nodes[i].parent;
    if (p != no_node && p < n) subtree[p] += subtree[i];
  }
  for (std::uint32_t i = 0; i < n; ++i) {
    if (subtree[i] == 0) continue;
    std::uint32_t const p = nodes[i].parent;
    (p != no_node && p < n ? children[p] : roots).push_back(i);
  }
  auto const by_total = [&](std::uint32_t a, std::uint32_t b) {
    if (nodes[a].cpu.total() != nodes[b].cpu.total())
      return nodes[a].cpu.total() > nodes[b].cpu.total();
    return nodes[a].name < nodes[b].name;
  };
  std::sort(roots.begin(), roots.end(), by_total);
  for (auto& c : children) std::sort(c.begin(), c.end(), by_total);

  struct Item {
    std::uint32_t node;
    std::size_t parent_row;
    std::size_t depth;
  };
  std::vector<Item> todo;
  for (std::size_t k = roots.size(); k-- > 0;)
    todo.push_back(Item{roots[k], static_cast<std::size_t>(-1), 0});
  while (!todo.empty()) {
    Item const it = todo.back();
    todo.pop_back();
    NodeCopy const& node = nodes[it.node];
    PathStats row;
    row.name = component(node.domain, node.name);
    row.path = child_path(
        it.parent_row == static_cast<std::size_t>(-1) ? nullptr : &out[it.parent_row].path,
        row.name);
    row.domain = node.domain;
    row.depth = it.depth;
    row.parent = it.parent_row;
    row.thread = thread;
    row.cpu = time_stats(node.cpu);
    row.gpu = time_stats(node.gpu);
    if (!node.work.empty()) row.work = work_stats(node.work, names);
    std::int64_t child_total = 0;
    for (std::uint32_t c : children[it.node]) child_total += nodes[c].cpu.total();
    row.self_ns = std::max<std::int64_t>(0, row.cpu.total_ns - child_total);
    std::size_t const index = out.size();
    out.push_back(std::move(row));
    auto const& ch = children[it.node];
    for (std::size_t k = ch.size(); k-- > 0;) todo.push_back(Item{ch[k], index, it.depth + 1});
  }
}

/// True when a CUDA tool is injected into the process (Nsight Compute and Nsight Systems set
/// CUDA_INJECTION64_PATH to load themselves).
inline bool tool_injected() noexcept {
  char const* v = std::getenv("CUDA_INJECTION64_PATH");
  return v != nullptr && *v != '\0';
}

/// Gives `streams` the names the program gave them, learning the key of names given before the
/// GPU source could tell it.
inline void name_streams(State& s, GpuSource* src, std::vector<GpuStreamStats>& streams) {
  std::vector<StreamName> names;
  {
    std::lock_guard<std::mutex> lock{s.stream_names_mutex};
    names = s.stream_names;
  }
  for (StreamName& n : names) {
    if (!n.keyed && src != nullptr && src->stream_key(const_cast<void*>(n.handle), n.key)) {
      n.keyed = true;
      std::lock_guard<std::mutex> lock{s.stream_names_mutex};
      for (StreamName& kept : s.stream_names) {
        if (kept.handle == n.handle) {
          kept.key = n.key;
          kept.keyed = true;
        }
      }
    }
    if (!n.keyed) continue;
    for (GpuStreamStats& st : streams) {
      if ((std::uint64_t{st.device} << 32 | st.stream) == n.key) st.name = n.name;
    }
  }
}

/// Everything the report knows now, merged over threads, without the advice (advised_snapshot.hpp
/// adds it). Completes GPU timing first (the GPU source's flush: the only place the report waits
/// for the GPU).
inline ReportSnapshot merged_snapshot() {
  ReportSnapshot snap;
  snap.pid = process_id();
  snap.forked_from = forked_from.load(std::memory_order_relaxed);
  if (auto r = launcher_rank()) snap.rank = r->rank;
  State* s = state();
  if (s == nullptr) return snap;
  GpuSource* const src = s->source.load(std::memory_order_acquire);
  if (src != nullptr) src->flush(*s);

  std::vector<ThreadData*> threads;
  std::int64_t origin = 0;
  {
    std::lock_guard<std::mutex> lock{s->mutex};
    snap.captured_only = s->options.captured_only;
    origin = s->origin.load(std::memory_order_relaxed);
    snap.run_ns = s->now() - origin;
    for (auto const& t : s->threads) threads.push_back(t.get());
  }

  // The thread taking the snapshot is alive, even when it runs the at-exit report after its
  // thread-local data (and so its exit mark) was destroyed: the main thread returning from main.
  std::uint32_t const self = os_thread_id();
  KernelNames names;
  if (src != nullptr) names = [src](std::uint32_t id) { return src->kernel_name(id); };
  std::vector<NodeCopy> merged;
  std::unordered_map<std::string, std::uint32_t> merged_index;
  Distribution steps;
  std::vector<StepPoint> series;
  std::vector<MarkStats> marks;
  std::unordered_map<std::string, std::size_t> mark_index;
  for (ThreadData* td : threads) {
    ThreadStats info;
    std::vector<NodeCopy> nodes;
    Distribution thread_steps;
    std::vector<StepPoint> thread_series;
    std::vector<Mark> thread_marks;
    {
      SpinGuard lock{td->lock};
      info.id = td->tid;
      info.name = td->name;
      info.ranges = td->ranges;
      info.trace_dropped = td->trace_dropped;
      info.paths_over_limit = td->paths_over_limit;
      info.depth_over_limit = td->depth_over_limit;
      info.marks_over_limit = td->marks_over_limit;
      nodes.reserve(td->nodes.size());
      for (Node const& n : td->nodes)
        nodes.push_back(NodeCopy{n.parent, n.domain, n.name, n.cpu, n.gpu, GpuWork{}});
      thread_steps = td->steps;
      thread_series = td->step_series.points();
      thread_marks = td->marks;
    }
    info.exited = td->exited.load(std::memory_order_acquire) && info.id != self;
    if (src != nullptr && !nodes.empty()) {
      std::vector<GpuWork> work(nodes.size());
      src->copy_work(*s, *td, work);
      for (std::size_t i = 0; i < nodes.size(); ++i) nodes[i].work = std::move(work[i]);
    }
    if (info.ranges == 0 && nodes.empty() && thread_marks.empty()) continue;  // named but silent
    emit_tree(nodes, info.id, snap.thread_paths, names);
    std::vector<std::uint32_t> to_merged(nodes.size(), no_node);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      NodeCopy const& n = nodes[i];
      std::uint32_t const mp = n.parent == no_node || n.parent >= i ? no_node : to_merged[n.parent];
      std::string k = std::to_string(mp);
      k += '\x1f';
      k += key(n.domain, n.name);
      auto [it, fresh] =
          merged_index.emplace(std::move(k), static_cast<std::uint32_t>(merged.size()));
      if (fresh) {
        merged.push_back(NodeCopy{mp, n.domain, n.name, Distribution{}, Distribution{}, GpuWork{}});
      }
      merged[it->second].cpu.merge(n.cpu);
      merged[it->second].gpu.merge(n.gpu);
      merged[it->second].work.merge(n.work);
      to_merged[i] = it->second;
    }
    steps.merge(thread_steps);
    series.insert(series.end(), thread_series.begin(), thread_series.end());
    for (Mark const& m : thread_marks) {
      auto [it, fresh] = mark_index.emplace(key(m.domain, m.name), marks.size());
      if (fresh) marks.push_back(MarkStats{m.name, m.domain, 0});
      marks[it->second].count += m.count;
    }
    snap.threads.push_back(std::move(info));
  }
  emit_tree(merged, 0, snap.paths, names);
  snap.steps = time_stats(steps);
  snap.step_series = StepSeries::merged(std::move(series));
  for (StepPoint& p : snap.step_series) p.start_ns -= origin;
  snap.marks = std::move(marks);
  {
    std::lock_guard<std::mutex> lock{s->se_mutex};
    for (StartEndStats const& se : s->se_stats) {
      snap.start_end.push_back(NamedStats{se.name, se.domain, time_stats(se.time)});
    }
  }
  std::sort(
      snap.start_end.begin(), snap.start_end.end(),
      [](NamedStats const& a, NamedStats const& b) { return a.time.total_ns > b.time.total_ns; });
  if (src != nullptr) src->fill(*s, snap.gpu);
  name_streams(*s, src, snap.gpu.streams);
  {
    std::lock_guard<std::mutex> lock{s->mutex};
    snap.gpu.note = s->gpu_note;
  }
  if (src != nullptr && tool_injected()) {
    if (!snap.gpu.note.empty()) snap.gpu.note += "; ";
    snap.gpu.note +=
        "a CUDA tool is attached (CUDA_INJECTION64_PATH is set: Nsight Compute, Nsight Systems or "
        "a sanitizer), which serialises or slows GPU work: GPU times are not those of a normal run";
  }
  return snap;
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
