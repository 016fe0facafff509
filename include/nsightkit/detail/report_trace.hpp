// Internal: the report's reading side — merging every thread's data into a ReportSnapshot, the
// Chrome trace-event export, writing the configured outputs, and the at-exit handler. Part of
// <nsightkit/report.hpp> (enabled builds only).
#pragma once

#if !defined(NSIGHTKIT_DETAIL_REPORT_TYPES)
#error "internal header: include <nsightkit/report.hpp>"
#endif

#include <nsightkit/config.hpp>
#include <nsightkit/detail/report_env.hpp>
#include <nsightkit/detail/report_output.hpp>
#include <nsightkit/detail/report_state.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {

/// A path component as the report shows it: the name, or "domain@name" outside the "nsightkit"
/// and global domains (ncu's notation for domain-qualified ranges).
inline std::string report_component(std::string const& domain, std::string const& name) {
  if (domain.empty() || domain == "nsightkit") return name;
  return domain + "@" + name;
}

inline TimeStats report_time_stats(Distribution const& d) {
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
struct ReportNodeCopy {
  std::uint32_t parent{no_node};
  std::string domain;
  std::string name;
  Distribution cpu;
  Distribution gpu;
};

/// Appends `nodes` (parents before children) as rows in tree order: siblings by total time,
/// descending; nodes whose whole subtree recorded nothing are left out.
inline void report_emit_tree(std::vector<ReportNodeCopy> const& nodes, std::uint32_t thread,
                             std::vector<PathStats>& out) {
  std::size_t const n = nodes.size();
  std::vector<std::vector<std::uint32_t>> children(n);
  std::vector<std::uint32_t> roots;
  std::vector<std::uint64_t> subtree(n, 0);
  for (std::size_t i = 0; i < n; ++i) subtree[i] = nodes[i].cpu.count();
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
    ReportNodeCopy const& node = nodes[it.node];
    PathStats row;
    row.name = report_component(node.domain, node.name);
    row.path = it.parent_row == static_cast<std::size_t>(-1)
                   ? row.name
                   : out[it.parent_row].path + "/" + row.name;
    row.domain = node.domain;
    row.depth = it.depth;
    row.parent = it.parent_row;
    row.thread = thread;
    row.cpu = report_time_stats(node.cpu);
    row.gpu = report_time_stats(node.gpu);
    std::int64_t child_total = 0;
    for (std::uint32_t c : children[it.node]) child_total += nodes[c].cpu.total();
    row.self_ns = std::max<std::int64_t>(0, row.cpu.total_ns - child_total);
    std::size_t const index = out.size();
    out.push_back(std::move(row));
    auto const& ch = children[it.node];
    for (std::size_t k = ch.size(); k-- > 0;) todo.push_back(Item{ch[k], index, it.depth + 1});
  }
}

inline ReportSnapshot report_snapshot() {
  ReportSnapshot snap;
  snap.pid = process_id();
  if (auto r = launcher_rank()) snap.rank = r->rank;
  ReportState* s = report_state();
  if (s == nullptr) return snap;
  if (!s->gpu_shutdown.load(std::memory_order_relaxed)) gpu_flush(*s);

  std::vector<ReportThreadData*> threads;
  {
    std::lock_guard<std::mutex> lock{s->mutex};
    snap.captured_only = s->options.captured_only;
    snap.run_ns = s->now() - s->origin.load(std::memory_order_relaxed);
    for (auto const& t : s->threads) threads.push_back(t.get());
  }

  std::vector<ReportNodeCopy> merged;
  std::unordered_map<std::string, std::uint32_t> merged_index;
  Distribution steps;
  std::vector<MarkStats> marks;
  std::unordered_map<std::string, std::size_t> mark_index;
  for (ReportThreadData* td : threads) {
    ThreadStats info;
    std::vector<ReportNodeCopy> nodes;
    Distribution thread_steps;
    std::vector<ReportMark> thread_marks;
    {
      ReportLock lock{td->lock};
      info.id = td->tid;
      info.name = td->name;
      info.ranges = td->ranges;
      info.trace_dropped = td->trace_dropped;
      info.paths_over_limit = td->paths_over_limit;
      snap.gpu.ranges_pending += td->pending.size();
      nodes.reserve(td->nodes.size());
      for (ReportNode const& n : td->nodes)
        nodes.push_back(ReportNodeCopy{n.parent, n.domain, n.name, n.cpu, n.gpu});
      thread_steps = td->steps;
      thread_marks = td->marks;
    }
    info.exited = td->exited.load(std::memory_order_acquire);
    if (info.ranges == 0 && nodes.empty() && thread_marks.empty()) continue;  // named but silent
    report_emit_tree(nodes, info.id, snap.thread_paths);
    std::vector<std::uint32_t> to_merged(nodes.size(), no_node);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      ReportNodeCopy const& n = nodes[i];
      std::uint32_t const mp = n.parent == no_node || n.parent >= i ? no_node : to_merged[n.parent];
      std::string key = std::to_string(mp);
      key += '\x1f';
      key += report_key(n.domain, n.name);
      auto [it, fresh] =
          merged_index.emplace(std::move(key), static_cast<std::uint32_t>(merged.size()));
      if (fresh)
        merged.push_back(ReportNodeCopy{mp, n.domain, n.name, Distribution{}, Distribution{}});
      merged[it->second].cpu.merge(n.cpu);
      merged[it->second].gpu.merge(n.gpu);
      to_merged[i] = it->second;
    }
    steps.merge(thread_steps);
    for (ReportMark const& m : thread_marks) {
      auto [it, fresh] = mark_index.emplace(report_key(m.domain, m.name), marks.size());
      if (fresh) marks.push_back(MarkStats{m.name, m.domain, 0});
      marks[it->second].count += m.count;
    }
    snap.threads.push_back(std::move(info));
  }
  report_emit_tree(merged, 0, snap.paths);
  snap.steps = report_time_stats(steps);
  snap.marks = std::move(marks);
  {
    std::lock_guard<std::mutex> lock{s->se_mutex};
    for (ReportStartEndStats const& se : s->se_stats) {
      snap.start_end.push_back(NamedStats{se.name, se.domain, report_time_stats(se.time)});
    }
  }
  std::sort(
      snap.start_end.begin(), snap.start_end.end(),
      [](NamedStats const& a, NamedStats const& b) { return a.time.total_ns > b.time.total_ns; });
  snap.gpu.ranges_timed = s->gpu_timed.load(std::memory_order_relaxed);
  snap.gpu.ranges_skipped = s->gpu_skipped.load(std::memory_order_relaxed);
  snap.gpu.events_created = s->gpu_events_created.load(std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock{s->gpu_mutex};
    snap.gpu.error = s->gpu_error;
  }
  return snap;
}

// ---------------------------------------------------------------------------------------------
// Chrome trace-event JSON

/// Streams text to a FILE (in 1 MiB pieces) or keeps it in memory.
class ReportTextSink {
 public:
  explicit ReportTextSink(std::FILE* file) noexcept : file_{file} {}
  std::string& buffer() noexcept { return buf_; }
  void maybe_flush() {
    if (file_ != nullptr && buf_.size() >= (std::size_t{1} << 20)) flush();
  }
  void flush() {
    if (file_ == nullptr || buf_.empty()) return;
    if (std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size()) ok_ = false;
    buf_.clear();
  }
  [[nodiscard]] bool ok() const noexcept { return ok_; }

 private:
  std::FILE* file_;
  std::string buf_;
  bool ok_{true};
};

/// Track ids of GPU streams start here, above any OS thread id (Linux pid_max is at most 2^22).
inline constexpr std::uint32_t report_gpu_track_base = 0x40000000u;

/// Writes the whole trace: metadata (process, thread and stream track names, sort order), "X"
/// events per range and GPU interval, "i" events for marks, "b"/"e" pairs for start/end ranges.
inline void report_write_trace(ReportTextSink& sink) {
  ReportState* s = report_state();
  long const os_pid = process_id();
  auto const rank = launcher_rank();
  long const pid = rank ? static_cast<long>(rank->rank) : os_pid;
  std::string& out = sink.buffer();
  std::int64_t origin = 0;
  // The default clock is CLOCK_MONOTONIC on Linux, which the host's processes share.
  bool steady = true;
  char const* source = "steady_clock";
  std::uint64_t dropped = 0;

  std::vector<ReportThreadData*> threads;
  if (s != nullptr) {
    if (!s->gpu_shutdown.load(std::memory_order_relaxed)) gpu_flush(*s);
    std::lock_guard<std::mutex> lock{s->mutex};
    origin = s->origin.load(std::memory_order_relaxed);
    steady = s->clock.load(std::memory_order_relaxed) == nullptr;
    if (steady && s->tsc.usable) source = "tsc calibrated to steady_clock";
    if (!steady) source = "ReportOptions::clock";
    for (auto const& t : s->threads) threads.push_back(t.get());
  }

  out += "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  bool first = true;
  auto const begin_event = [&]() {
    if (!first) out += ",\n";
    first = false;
  };
  auto const meta_name = [&](char const* what, std::uint32_t tid, std::string const& name) {
    begin_event();
    fmt::format_to(
        std::back_inserter(out),
        "{{\"ph\":\"M\",\"name\":\"{}\",\"pid\":{},\"tid\":{},\"ts\":0,\"args\":{{\"name\":", what,
        pid, tid);
    json_string(out, name);
    out += "}}";
  };
  auto const meta_sort = [&](std::uint32_t tid, std::size_t index) {
    begin_event();
    fmt::format_to(std::back_inserter(out),
                   "{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{},\"tid\":{},\"ts\":0,"
                   "\"args\":{{\"sort_index\":{}}}}}",
                   pid, tid, index);
  };
  meta_name("process_name", 0,
            rank ? fmt::format("nsightkit rank {} (pid {})", rank->rank, os_pid)
                 : fmt::format("nsightkit pid {}", os_pid));

  struct StreamTrack {
    void* stream;
    int device;
    std::uint32_t tid;  // recording thread when the stream needs one track per thread, else 0
    std::uint32_t track;
  };
  std::vector<StreamTrack> tracks;
  struct GpuOut {
    GpuTraceEvent e;
    std::uint32_t track;
    std::string const* name;
    std::string const* path;
  };

  for (ReportThreadData* td : threads) {
    std::vector<ReportTraceEvent> events;
    std::vector<std::string> labels;
    std::vector<Payload> payloads;
    std::vector<std::string> names, paths;  // JSON-escaped, per node
    std::vector<ReportInstant> instants;
    std::vector<std::string> mark_names;
    std::vector<GpuTraceEvent> gpu;
    std::vector<GpuStreamSlot> streams;
    std::string thread_name;
    std::uint32_t tid;
    std::size_t index;
    {
      ReportLock lock{td->lock};
      tid = td->tid;
      index = td->index;
      thread_name = td->name;
      events = td->trace;
      labels = td->labels;
      payloads = td->payloads;
      instants = td->instants;
      gpu = td->gpu_trace;
      streams = td->streams;
      dropped += td->trace_dropped;
      names.resize(td->nodes.size());
      paths.resize(td->nodes.size());
      for (std::size_t i = 0; i < td->nodes.size(); ++i) {
        ReportNode const& n = td->nodes[i];
        std::string const comp = report_component(n.domain, n.name);
        std::string path = n.parent != no_node && n.parent < i ? paths[n.parent] : std::string{};
        if (!path.empty()) path += '/';
        path += comp;
        paths[i] = std::move(path);
        names[i] = comp;
      }
      for (ReportMark const& m : td->marks)
        mark_names.push_back(report_component(m.domain, m.name));
    }
    if (events.empty() && instants.empty() && gpu.empty() && thread_name.empty()) continue;
    for (auto& v : names) {
      std::string e;
      json_string(e, v);
      v = std::move(e);
    }
    for (auto& v : paths) {
      std::string e;
      json_string(e, v);
      v = std::move(e);
    }
    meta_name("thread_name", tid,
              thread_name.empty() ? fmt::format("thread {}", tid) : thread_name);
    meta_sort(tid, index);

    // Nested ranges on one track: parents first at equal start times.
    std::sort(events.begin(), events.end(),
              [](ReportTraceEvent const& a, ReportTraceEvent const& b) {
                return a.start != b.start ? a.start < b.start : a.dur > b.dur;
              });
    for (ReportTraceEvent const& e : events) {
      begin_event();
      out += "{\"ph\":\"X\",\"name\":";
      bool const step = e.node == no_node;
      if (step) {
        json_string(out, e.label < labels.size() ? labels[e.label] : std::string{"step"});
      } else {
        out += e.node < names.size() ? names[e.node] : std::string{"\"?\""};
      }
      out += step ? ",\"cat\":\"nsightkit step\"" : ",\"cat\":\"nsightkit\"";
      fmt::format_to(std::back_inserter(out), ",\"pid\":{},\"tid\":{},\"ts\":", pid, tid);
      json_micros(out, e.start - origin);
      out += ",\"dur\":";
      json_micros(out, e.dur);
      if (!step && e.node < paths.size()) {
        out += ",\"args\":{\"path\":";
        out += paths[e.node];
        if (e.label < payloads.size()) {
          out += ",\"payload\":";
          json_payload(out, payloads[e.label]);
        }
        out += '}';
      }
      out += '}';
      sink.maybe_flush();
    }
    for (ReportInstant const& m : instants) {
      begin_event();
      out += "{\"ph\":\"i\",\"s\":\"t\",\"name\":";
      json_string(out, m.mark < mark_names.size() ? mark_names[m.mark] : std::string{"mark"});
      fmt::format_to(std::back_inserter(out),
                     ",\"cat\":\"nsightkit mark\",\"pid\":{},\"tid\":{},\"ts\":", pid, tid);
      json_micros(out, m.t - origin);
      out += '}';
      sink.maybe_flush();
    }

    // GPU intervals: one track per stream; a stream used by several threads gets one track per
    // thread so that every track holds properly nested intervals.
    std::vector<GpuOut> gpu_out;
    for (GpuTraceEvent const& g : gpu) {
      if (g.stream_slot >= streams.size()) continue;
      GpuStreamSlot const& ss = streams[g.stream_slot];
      std::uint32_t track = no_node;
      for (StreamTrack const& t : tracks) {
        if (t.stream == ss.stream && t.device == ss.device && (t.tid == 0 || t.tid == tid))
          track = t.track;
      }
      if (track == no_node) {
        bool shared = false;
        for (StreamTrack& t : tracks) {
          if (t.stream == ss.stream && t.device == ss.device) shared = true;
        }
        track = report_gpu_track_base + static_cast<std::uint32_t>(tracks.size());
        tracks.push_back(StreamTrack{ss.stream, ss.device, tid, track});
        char handle[32];
        std::snprintf(handle, sizeof handle, "%p", ss.stream);
        std::string label =
            ss.stream == nullptr ? std::string{"default stream"} : fmt::format("stream {}", handle);
        label = fmt::format("GPU {} (device {}){}", label, ss.device,
                            shared ? fmt::format(", thread {}", tid) : "");
        meta_name("thread_name", track, label);
        meta_sort(track, 1000000 + tracks.size());
      }
      gpu_out.push_back(GpuOut{g, track, g.node < names.size() ? &names[g.node] : nullptr,
                               g.node < paths.size() ? &paths[g.node] : nullptr});
    }
    std::sort(gpu_out.begin(), gpu_out.end(), [](GpuOut const& a, GpuOut const& b) {
      return a.e.start != b.e.start ? a.e.start < b.e.start : a.e.dur > b.e.dur;
    });
    for (GpuOut const& g : gpu_out) {
      begin_event();
      out += "{\"ph\":\"X\",\"name\":";
      out += g.name != nullptr ? *g.name : std::string{"\"?\""};
      fmt::format_to(std::back_inserter(out),
                     ",\"cat\":\"nsightkit gpu\",\"pid\":{},\"tid\":{},\"ts\":", pid, g.track);
      json_micros(out, g.e.start - origin);
      out += ",\"dur\":";
      json_micros(out, g.e.dur);
      if (g.path != nullptr) {
        out += ",\"args\":{\"path\":";
        out += *g.path;
        fmt::format_to(std::back_inserter(out), ",\"cpu_thread\":{}}}", tid);
      }
      out += '}';
      sink.maybe_flush();
    }
  }

  if (s != nullptr) {
    std::vector<ReportStartEndEvent> se;
    std::vector<std::string> se_names;
    {
      std::lock_guard<std::mutex> lock{s->se_mutex};
      se = s->se_trace;
      for (auto const& st : s->se_stats) se_names.push_back(report_component(st.domain, st.name));
    }
    for (ReportStartEndEvent const& e : se) {
      for (int edge = 0; edge < 2; ++edge) {
        begin_event();
        fmt::format_to(std::back_inserter(out), "{{\"ph\":\"{}\",\"name\":", edge == 0 ? "b" : "e");
        json_string(out, e.stats < se_names.size() ? se_names[e.stats] : std::string{"range"});
        fmt::format_to(std::back_inserter(out),
                       ",\"cat\":\"nsightkit start/end\",\"id\":{},\"pid\":{},\"tid\":{},\"ts\":",
                       e.id, pid, e.tid);
        json_micros(out, (edge == 0 ? e.start : e.end) - origin);
        out += '}';
      }
      sink.maybe_flush();
    }
  }
  fmt::format_to(std::back_inserter(out),
                 "\n],\"otherData\":{{\"producer\":\"nsightkit "
                 "{}\",\"rank\":{},\"pid\":{},\"events_dropped\":{},\"clock\":\"{}\","
                 "\"clock_source\":\"{}\",\"time_origin_ns\":{}}}}}\n",
                 version_string, rank ? std::to_string(rank->rank) : std::string{"null"}, os_pid,
                 dropped, steady ? "steady" : "custom", source, origin);
  sink.flush();
}

inline std::string report_trace_json() {
  ReportTextSink sink{nullptr};
  report_write_trace(sink);
  return std::move(sink.buffer());
}

// ---------------------------------------------------------------------------------------------
// Writing

inline bool report_write_trace_file(std::string const& path) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    std::fprintf(stderr, "nsightkit report: cannot write the trace to '%s': %s\n", path.c_str(),
                 std::strerror(errno));
    return false;
  }
  ReportTextSink sink{f};
  report_write_trace(sink);
  bool const ok = std::fclose(f) == 0 && sink.ok();
  if (!ok)
    std::fprintf(stderr, "nsightkit report: writing the trace to '%s' failed\n", path.c_str());
  return ok;
}

inline bool report_write() noexcept {
  ReportState* s = report_state();
  if (s == nullptr) return false;
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  try {
#endif
    ReportOptions const o = report_options();
    ReportSnapshot const snap = report_snapshot();
    int const r = launcher_rank_or_none();
    long const pid = process_id();
    bool ok = true;
    std::vector<std::string> wrote;
    if (!o.table.empty()) {
      std::string const text = format_table(snap, o.per_thread);
      if (o.table == "stderr" || o.table == "stdout") {
        std::FILE* f = o.table == "stderr" ? stderr : stdout;
        std::fputs(text.c_str(), f);
        std::fflush(f);
      } else {
        std::string const path = expand_output_path(o.table, r, pid);
        if (write_text_file(path, text, "table")) {
          wrote.push_back(path + " (table)");
        } else {
          ok = false;
        }
      }
    }
    if (!o.json.empty()) {
      std::string const path = expand_output_path(o.json, r, pid);
      if (write_text_file(path, summary_json(snap), "summary JSON")) {
        wrote.push_back(path + " (summary)");
      } else {
        ok = false;
      }
    }
    if (!o.csv.empty()) {
      std::string const path = expand_output_path(o.csv, r, pid);
      if (write_text_file(path, summary_csv(snap), "summary CSV")) {
        wrote.push_back(path + " (summary CSV)");
      } else {
        ok = false;
      }
    }
    if (!o.trace.empty()) {
      std::string const path = expand_output_path(o.trace, r, pid);
      if (report_write_trace_file(path)) {
        wrote.push_back(path + " (trace)");
      } else {
        ok = false;
      }
    }
    if (!wrote.empty()) {
      std::string line = "nsightkit report: wrote";
      for (std::size_t i = 0; i < wrote.size(); ++i) line += (i == 0 ? " " : ", ") + wrote[i];
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    return ok;
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  } catch (...) {
    std::fprintf(stderr, "nsightkit report: out of memory while writing the report\n");
    return false;
  }
#endif
}

/// Registered with std::atexit by the first enable() with ReportOptions::at_exit.
inline void report_at_exit() noexcept {
  ReportState* s = report_state();
  if (s == nullptr) return;
  {
    std::lock_guard<std::mutex> lock{s->mutex};
    if (!s->started || !s->options.at_exit) return;
  }
  if (s->exit_written.exchange(true)) return;
  report_write();
  report_disable();  // ranges of static destructors after this point go nowhere
}

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
