// Internal: the report's text outputs made from a ReportSnapshot — the table, the summary JSON and
// CSV — written in pieces into a TextSink so a large report never has to fit in one string. Pure
// C++ (available in disabled builds, where snapshots are empty).
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/format.hpp>
#include <nsightkit/detail/json.hpp>
#include <nsightkit/detail/text.hpp>
#include <nsightkit/report_types.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// Text on its way out: streamed to a FILE in 1 MiB pieces, or kept whole in memory (no file).
class TextSink {
 public:
  explicit TextSink(std::FILE* file = nullptr) noexcept : file_{file} {}
  std::string& buffer() noexcept { return buf_; }
  /// Writes the buffer out once it holds 1 MiB (a no-op in memory).
  void maybe_flush() {
    if (file_ != nullptr && buf_.size() >= (std::size_t{1} << 20)) flush();
  }
  void flush() {
    if (file_ == nullptr || buf_.empty()) return;
    if (ok_ && std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size()) {
      ok_ = false;
      errno_ = errno;
    }
    buf_.clear();
  }
  /// False once a write failed; error() is its errno.
  [[nodiscard]] bool ok() const noexcept { return ok_; }
  [[nodiscard]] int error() const noexcept { return errno_; }

 private:
  std::FILE* file_;
  std::string buf_;
  bool ok_{true};
  int errno_{0};
};

// ---------------------------------------------------------------------------------------------
// Table

inline bool any_gpu(std::vector<PathStats> const& rows) noexcept {
  return std::any_of(rows.begin(), rows.end(), [](PathStats const& r) { return r.gpu.count != 0; });
}

/// True when a row holds GPU work measured by CUPTI.
inline bool has_work(PathStats const& r) noexcept {
  return r.work.calls_with_work != 0 || r.work.kernels != 0 || r.work.allocations != 0;
}

inline bool any_work(std::vector<PathStats> const& rows) noexcept {
  return std::any_of(rows.begin(), rows.end(), [](PathStats const& r) { return has_work(r); });
}

/// `s` left-aligned in `width` columns (code points), cut with "..." when longer.
inline void pad_cell(std::string& out, std::string_view s, std::size_t width) {
  std::size_t const n = code_points(s);
  if (n > width) {
    out += prefix_code_points(s, width >= 3 ? width - 3 : 0);
    out.append(width >= 3 ? 3 : width, '.');
    return;
  }
  out += s;
  out.append(width - n, ' ');
}

/// Appends one tree-indented table of `rows` (already in tree order, siblings by total).
inline void format_rows(TextSink& sink, std::vector<PathStats> const& rows, std::int64_t run_ns) {
  std::string& out = sink.buffer();
  bool const gpu = any_gpu(rows);
  std::size_t width = 4;
  std::vector<std::string> labels;
  labels.reserve(rows.size());
  for (auto const& r : rows) {
    std::string label(2 * std::min<std::size_t>(r.depth, 20), ' ');
    label += printable(r.name);
    width = std::max(width, code_points(label));
    labels.push_back(std::move(label));
  }
  width = std::min<std::size_t>(width, 60);
  pad_cell(out, "path", width);
  fmt::format_to(std::back_inserter(out), " {:>8} {:>10} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10}",
                 "calls", "total", "%run", "self", "mean", "p50", "p95", "max");
  bool const work = any_work(rows);
  if (gpu)
    fmt::format_to(std::back_inserter(out), "  | {:>10} {:>10} {:>10} {:>10}", "GPU total",
                   "GPU mean", "GPU p95", "GPU max");
  if (work)
    fmt::format_to(std::back_inserter(out), "  | {:>8} {:>10} {:>10} {:>10} {:>10}", "kernels",
                   "GPU busy", "self busy", "GPU idle", "launch p50");
  out += '\n';
  for (std::size_t i = 0; i < rows.size(); ++i) {
    PathStats const& r = rows[i];
    pad_cell(out, labels[i], width);
    std::string pct = "-";
    if (run_ns > 0) {
      pct = fmt::format("{:.1f}%",
                        100.0 * static_cast<double>(r.cpu.total_ns) / static_cast<double>(run_ns));
    }
    fmt::format_to(std::back_inserter(out),
                   " {:>8} {:>10} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10}", r.cpu.count,
                   format_duration(r.cpu.total_ns), pct, format_duration(r.self_ns),
                   format_duration(static_cast<std::int64_t>(r.cpu.mean_ns + 0.5)),
                   format_percentile(r.cpu.p50_ns, r.cpu.exact),
                   format_percentile(r.cpu.p95_ns, r.cpu.exact), format_duration(r.cpu.max_ns));
    if (gpu) {
      if (r.gpu.count == 0) {
        fmt::format_to(std::back_inserter(out), "  | {:>10} {:>10} {:>10} {:>10}", "-", "-", "-",
                       "-");
      } else {
        fmt::format_to(std::back_inserter(out), "  | {:>10} {:>10} {:>10} {:>10}",
                       format_duration(r.gpu.total_ns),
                       format_duration(static_cast<std::int64_t>(r.gpu.mean_ns + 0.5)),
                       format_percentile(r.gpu.p95_ns, r.gpu.exact), format_duration(r.gpu.max_ns));
      }
    }
    if (work) {
      if (!has_work(r)) {
        fmt::format_to(std::back_inserter(out), "  | {:>8} {:>10} {:>10} {:>10} {:>10}", "-", "-",
                       "-", "-", "-");
      } else {
        GpuWorkStats const& w = r.work;
        fmt::format_to(std::back_inserter(out), "  | {:>8} {:>10} {:>10} {:>10} {:>10}", w.kernels,
                       format_duration(w.busy_ns), format_duration(w.self_busy_ns),
                       format_duration(w.idle_ns),
                       w.launch_latency.count != 0
                           ? format_percentile(w.launch_latency.p50_ns, w.launch_latency.exact)
                           : std::string{"-"});
      }
    }
    out += '\n';
    sink.maybe_flush();
  }
}

inline void format_time_line(std::string& out, TimeStats const& t, char const* unit) {
  fmt::format_to(std::back_inserter(out), "{} {}, total {}, mean {}, p50 {}, p95 {}, max {}",
                 t.count, unit, format_duration(t.total_ns),
                 format_duration(static_cast<std::int64_t>(t.mean_ns + 0.5)),
                 format_percentile(t.p50_ns, t.exact), format_percentile(t.p95_ns, t.exact),
                 format_duration(t.max_ns));
}

inline std::string thread_label(ThreadStats const& t) {
  std::string s = std::to_string(t.id);
  if (!t.name.empty()) s += " \"" + printable(t.name) + "\"";
  return s;
}

/// A name with every run of digits replaced by '#': "step 12" and "step 13" become "step #".
inline std::string digits_folded(std::string_view name) {
  std::string out;
  bool in_digits = false;
  for (char c : name) {
    bool const digit = c >= '0' && c <= '9';
    if (digit && !in_digits) out += '#';
    if (!digit) out += c;
    in_digits = digit;
  }
  return out;
}

/// Siblings that differ only in numbers and ran about once each: a range named per step or per
/// iteration ("step {}"), which makes one path (and one copy of the tree below it) each time.
/// Returns a note naming the biggest such group, or "".
inline std::string numbered_siblings_note(std::vector<PathStats> const& rows) {
  constexpr std::size_t threshold = 16;
  std::map<std::pair<std::size_t, std::string>, std::pair<std::size_t, std::size_t>> groups;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    PathStats const& r = rows[i];
    if (r.cpu.count > 2 || r.name.find_first_of("0123456789") == std::string::npos) continue;
    auto& g = groups[{r.parent, digits_folded(r.name)}];
    if (g.first++ == 0) g.second = i;
  }
  std::size_t best = 0, example = 0;
  for (auto const& [k, g] : groups) {
    if (g.first > best) {
      best = g.first;
      example = g.second;
    }
  }
  if (best < threshold) return {};
  PathStats const& r = rows[example];
  std::string where =
      r.parent < rows.size() ? " under '" + printable(rows[r.parent].path) + "'" : "";
  return fmt::format(
      "note: {} sibling paths{} differ only in numbers and ran once or twice each (e.g. '{}'): a "
      "range named per step or iteration makes a new path, and a copy of everything inside it, "
      "each time. Name it once (\"step\") and let a CaptureWindow number the steps.\n",
      best, where, printable(r.name));
}

/// The advice section (docs/advice.md): each finding, its cost, where, why and what to do.
inline void format_advice(std::string& out, ReportSnapshot const& s) {
  // What could not be judged is said where GPU work was measured at all (a CPU-only program
  // gets no lines about GPU rules).
  bool const gpu_used = s.gpu.source == "cupti" || s.gpu.ranges_timed != 0;
  if (gpu_used) {
    for (std::string const& m : s.advice_missing) out += "advice not evaluated: " + m + "\n";
  }
  if (s.advice.empty()) return;
  out += "\nadvice (most costly first; docs/advice.md):\n";
  for (Advice const& a : s.advice) {
    fmt::format_to(std::back_inserter(out), "  [{}] {}: costs about {} {}\n", a.severity, a.rule,
                   format_duration(a.cost_ns), s.steps.count != 0 ? "per step" : "in the run");
    out += "      where: " + printable(a.evidence) + "\n";
    out += "      what to do: " + a.suggestion + "\n";
  }
}

/// The GPU lines of a table whose GPU times come from CUPTI.
inline void format_cupti_lines(std::string& out, ReportSnapshot const& s) {
  GpuTimingStats const& g = s.gpu;
  fmt::format_to(std::back_inserter(out),
                 "GPU (cupti: kernels, copies and memsets of every stream, attributed to the range "
                 "that launched them; busy = union of their intervals, idle = span - busy): {} "
                 "activity records",
                 g.records);
  if (g.records_unattributed != 0)
    fmt::format_to(std::back_inserter(out), ", {} launched outside any range",
                   g.records_unattributed);
  if (g.records_dropped != 0)
    fmt::format_to(std::back_inserter(out), ", {} records dropped by CUPTI (buffers full)",
                   g.records_dropped);
  if (g.records_late != 0)
    fmt::format_to(std::back_inserter(out),
                   ", {} arrived after their range was settled (counted for its own path only)",
                   g.records_late);
  out += '\n';
  for (GpuDeviceStats const& d : g.devices) {
    double const pct = d.span_ns > 0
                           ? 100.0 * static_cast<double>(d.busy_ns) / static_cast<double>(d.span_ns)
                           : 0.0;
    fmt::format_to(std::back_inserter(out),
                   "GPU device {}: busy {} of {} ({:.1f}%), {} kernels, {} copies and memsets",
                   d.device, format_duration(d.busy_ns), format_duration(d.span_ns), pct, d.kernels,
                   d.copies);
    if (d.copy_busy_ns > 0)
      fmt::format_to(
          std::back_inserter(out), "; copies busy {}, {:.0f}% of it beside kernels",
          format_duration(d.copy_busy_ns),
          100.0 * static_cast<double>(d.copy_overlap_ns) / static_cast<double>(d.copy_busy_ns));
    out += '\n';
  }
  if (!g.error.empty()) out += "GPU: " + g.error + "\n";
}

/// The whole table: header, merged rows, optional per-thread rows, steps, start/end ranges,
/// marks, threads and notes.
inline void format_table(TextSink& sink, ReportSnapshot const& s, bool per_thread) {
  std::string& out = sink.buffer();
  std::uint64_t ranges = 0;
  for (auto const& t : s.threads) ranges += t.ranges;
  fmt::format_to(
      std::back_inserter(out),
      "nsightkit report ({}pid {}{}): {} of run time, {} thread{}, {} ranges{}\n",
      s.rank ? fmt::format("rank {}, ", *s.rank) : std::string{}, s.pid,
      s.forked_from != 0 ? fmt::format(", forked from pid {}", s.forked_from) : std::string{},
      format_duration(s.run_ns), s.threads.size(), s.threads.size() == 1 ? "" : "s", ranges,
      s.captured_only ? ", captured steps only" : "");
  out +=
      "CPU wall time per range path, all threads merged; %run = total / run time; self = total - "
      "children;\n"
      "percentiles by nearest rank, ~ = approximate (log histogram past the exact-sample "
      "limit)\n\n";
  if (s.paths.empty()) {
    out += "(no ranges recorded)\n";
  } else {
    format_rows(sink, s.paths, s.run_ns);
  }
  if (per_thread) {
    for (auto const& t : s.threads) {
      std::vector<PathStats> rows;
      for (auto const& r : s.thread_paths) {
        if (r.thread == t.id) rows.push_back(r);
      }
      fmt::format_to(std::back_inserter(out), "\nthread {}{}:\n", thread_label(t),
                     t.exited ? " (exited)" : "");
      if (rows.empty()) {
        out += "(no ranges)\n";
      } else {
        format_rows(sink, rows, s.run_ns);
      }
    }
  }
  if (s.steps.count != 0) {
    out += s.captured_only ? "\ncapture-window steps (captured only): "
                           : "\ncapture-window steps (every step of every window): ";
    format_time_line(out, s.steps, s.steps.count == 1 ? "step" : "steps");
    out += '\n';
  }
  if (!s.start_end.empty()) {
    out += "\nstart/end ranges (by name, not part of paths):\n";
    for (auto const& r : s.start_end) {
      out += "  ";
      if (!r.domain.empty() && r.domain != "nsightkit") out += printable(r.domain) + "@";
      out += printable(r.name);
      out += ": ";
      format_time_line(out, r.time, r.time.count == 1 ? "call" : "calls");
      out += '\n';
    }
  }
  if (!s.marks.empty()) {
    out += "\nmarks:\n";
    for (auto const& m : s.marks) {
      out += "  ";
      if (!m.domain.empty() && m.domain != "nsightkit") out += printable(m.domain) + "@";
      fmt::format_to(std::back_inserter(out), "{}: {}\n", printable(m.name), m.count);
    }
  }
  out += "\nthreads:";
  for (auto const& t : s.threads) {
    fmt::format_to(std::back_inserter(out), " {}{} {} ranges;", thread_label(t),
                   t.exited ? " (exited)" : "", t.ranges);
  }
  out += '\n';
  std::uint64_t dropped = 0, overflow = 0, deep = 0, marks = 0;
  for (auto const& t : s.threads) {
    dropped += t.trace_dropped;
    overflow += t.paths_over_limit;
    deep += t.depth_over_limit;
    marks += t.marks_over_limit;
  }
  if (overflow != 0) {
    fmt::format_to(std::back_inserter(out),
                   "note: {} ranges beyond the per-thread path limit were counted under \"(other "
                   "paths)\" (paths=N raises it)\n",
                   overflow);
  }
  if (deep != 0) {
    fmt::format_to(std::back_inserter(out),
                   "note: {} ranges nested deeper than the depth limit were counted under "
                   "\"(deeper ranges)\" (depth=N raises it)\n",
                   deep);
  }
  if (marks != 0) {
    fmt::format_to(std::back_inserter(out),
                   "note: {} marks beyond the per-thread limit of distinct names were counted "
                   "under \"(other marks)\"\n",
                   marks);
  }
  if (dropped != 0) {
    fmt::format_to(std::back_inserter(out),
                   "note: {} trace events beyond the per-thread limit were not kept "
                   "(trace-events=N raises it)\n",
                   dropped);
  }
  out += numbered_siblings_note(s.paths);
  if (!s.gpu.note.empty()) out += "GPU: " + s.gpu.note + "\n";
  format_advice(out, s);
  if (s.gpu.source == "cupti") {
    format_cupti_lines(out, s);
  } else if (s.gpu.ranges_timed != 0 || s.gpu.ranges_pending != 0 || !s.gpu.error.empty()) {
    fmt::format_to(
        std::back_inserter(out),
        "GPU ({}): {} ranges timed with CUDA events on their stream ({} events created){}{}\n",
        s.gpu.source.empty() ? "events" : s.gpu.source, s.gpu.ranges_timed, s.gpu.events_created,
        s.gpu.ranges_pending != 0 ? fmt::format(", {} still pending", s.gpu.ranges_pending)
                                  : std::string{},
        s.gpu.ranges_skipped != 0 ? fmt::format(", {} skipped", s.gpu.ranges_skipped)
                                  : std::string{});
    if (!s.gpu.error.empty()) out += "GPU timing stopped: " + s.gpu.error + "\n";
  }
  sink.flush();
}

inline std::string format_table(ReportSnapshot const& s, bool per_thread) {
  TextSink sink;
  format_table(sink, s, per_thread);
  return std::move(sink.buffer());
}

// ---------------------------------------------------------------------------------------------
// Summary JSON and CSV

inline void json_time(std::string& out, TimeStats const& t) {
  fmt::format_to(
      std::back_inserter(out),
      "{{\"count\":{},\"total_ns\":{},\"mean_ns\":{:.1f},\"min_ns\":{},\"p50_ns\":{},\"p95_ns\":{},"
      "\"max_ns\":{},\"exact\":{}}}",
      t.count, t.total_ns, t.mean_ns, t.min_ns, t.p50_ns, t.p95_ns, t.max_ns,
      t.exact ? "true" : "false");
}

inline void json_copies(std::string& out, char const* key, CopyStats const& c) {
  fmt::format_to(std::back_inserter(out),
                 ",\"{}\":{{\"count\":{},\"bytes\":{},\"total_ns\":{},\"pageable\":{}}}", key,
                 c.count, c.bytes, c.total_ns, c.pageable);
}

inline void json_work(std::string& out, GpuWorkStats const& w) {
  fmt::format_to(std::back_inserter(out),
                 "{{\"kernels\":{},\"self_kernels\":{},\"kernel_ns\":{},\"busy_ns\":{},"
                 "\"self_busy_ns\":{},\"span_ns\":{},\"idle_ns\":{},\"calls_with_work\":{},"
                 "\"streams\":{},\"launch_latency\":",
                 w.kernels, w.self_kernels, w.kernel_ns, w.busy_ns, w.self_busy_ns, w.span_ns,
                 w.idle_ns, w.calls_with_work, w.streams);
  json_time(out, w.launch_latency);
  json_copies(out, "h2d", w.h2d);
  json_copies(out, "d2h", w.d2h);
  json_copies(out, "d2d", w.d2d);
  json_copies(out, "other_copies", w.other_copies);
  json_copies(out, "memsets", w.memsets);
  out += ",\"top_kernels\":[";
  for (std::size_t i = 0; i < w.top_kernels.size(); ++i) {
    if (i != 0) out += ',';
    out += "{\"name\":";
    json_string(out, w.top_kernels[i].name);
    fmt::format_to(std::back_inserter(out), ",\"count\":{},\"total_ns\":{}}}",
                   w.top_kernels[i].count, w.top_kernels[i].total_ns);
  }
  fmt::format_to(std::back_inserter(out),
                 "],\"allocations\":{},\"allocated_bytes\":{},\"freed_bytes\":{},"
                 "\"peak_bytes\":{},\"sync_calls\":{},\"sync_ns\":{},\"sync_api\":",
                 w.allocations, w.allocated_bytes, w.freed_bytes, w.peak_bytes, w.sync_calls,
                 w.sync_ns);
  json_string(out, w.sync_api);
  fmt::format_to(std::back_inserter(out), ",\"legacy_stream_work\":{}}}", w.legacy_stream_work);
}

inline void json_row(std::string& out, PathStats const& r) {
  out += "{\"path\":";
  json_string(out, r.path);
  out += ",\"name\":";
  json_string(out, r.name);
  out += ",\"domain\":";
  json_string(out, r.domain);
  fmt::format_to(
      std::back_inserter(out),
      ",\"depth\":{},\"count\":{},\"total_ns\":{},\"self_ns\":{},\"mean_ns\":{:.1f},\"min_ns\":{},"
      "\"p50_ns\":{},\"p95_ns\":{},\"max_ns\":{},\"exact\":{},\"gpu\":",
      r.depth, r.cpu.count, r.cpu.total_ns, r.self_ns, r.cpu.mean_ns, r.cpu.min_ns, r.cpu.p50_ns,
      r.cpu.p95_ns, r.cpu.max_ns, r.cpu.exact ? "true" : "false");
  if (r.gpu.count == 0) {
    out += "null";
  } else {
    json_time(out, r.gpu);
  }
  out += ",\"gpu_work\":";
  if (!has_work(r)) {
    out += "null";
  } else {
    json_work(out, r.work);
  }
  out += '}';
}

inline void json_rows(TextSink& sink, std::vector<PathStats> const& rows, std::uint32_t thread,
                      bool filter) {
  std::string& out = sink.buffer();
  out += '[';
  bool first = true;
  for (auto const& r : rows) {
    if (filter && r.thread != thread) continue;
    if (!first) out += ',';
    first = false;
    out += "\n  ";
    json_row(out, r);
    sink.maybe_flush();
  }
  out += ']';
}

/// The machine-readable summary as JSON (format "nsightkit-report", version 1; docs/report.md).
inline void summary_json(TextSink& sink, ReportSnapshot const& s) {
  std::string& out = sink.buffer();
  fmt::format_to(
      std::back_inserter(out),
      "{{\"format\":\"nsightkit-report\",\"version\":1,\"nsightkit_version\":\"{}\",\"rank\":{},"
      "\"pid\":{},\"forked_from\":{},\"run_ns\":{},\"captured_only\":{},\n\"paths\":",
      version_string, s.rank ? std::to_string(*s.rank) : std::string{"null"}, s.pid,
      s.forked_from != 0 ? std::to_string(s.forked_from) : std::string{"null"}, s.run_ns,
      s.captured_only ? "true" : "false");
  json_rows(sink, s.paths, 0, false);
  out += ",\n\"threads\":[";
  for (std::size_t i = 0; i < s.threads.size(); ++i) {
    auto const& t = s.threads[i];
    if (i != 0) out += ',';
    fmt::format_to(std::back_inserter(out), "\n {{\"tid\":{},\"name\":", t.id);
    json_string(out, t.name);
    fmt::format_to(std::back_inserter(out),
                   ",\"exited\":{},\"ranges\":{},\"trace_events_dropped\":{},\"paths_over_limit\":"
                   "{},\"depth_over_limit\":{},\"marks_over_limit\":{},\"paths\":",
                   t.exited ? "true" : "false", t.ranges, t.trace_dropped, t.paths_over_limit,
                   t.depth_over_limit, t.marks_over_limit);
    json_rows(sink, s.thread_paths, t.id, true);
    out += '}';
  }
  out += "],\n\"steps\":";
  json_time(out, s.steps);
  out += ",\n\"step_series\":[";  // [start_ns, steps, total_ns, max_ns] per point
  for (std::size_t i = 0; i < s.step_series.size(); ++i) {
    StepPoint const& p = s.step_series[i];
    fmt::format_to(std::back_inserter(out), "{}[{},{},{},{}]", i == 0 ? "" : ",", p.start_ns,
                   p.steps, p.total_ns, p.max_ns);
  }
  out += ']';
  out += ",\n\"start_end_ranges\":[";
  for (std::size_t i = 0; i < s.start_end.size(); ++i) {
    if (i != 0) out += ',';
    out += "\n {\"name\":";
    json_string(out, s.start_end[i].name);
    out += ",\"domain\":";
    json_string(out, s.start_end[i].domain);
    out += ",\"time\":";
    json_time(out, s.start_end[i].time);
    out += '}';
  }
  out += "],\n\"marks\":[";
  for (std::size_t i = 0; i < s.marks.size(); ++i) {
    if (i != 0) out += ',';
    out += "\n {\"name\":";
    json_string(out, s.marks[i].name);
    out += ",\"domain\":";
    json_string(out, s.marks[i].domain);
    fmt::format_to(std::back_inserter(out), ",\"count\":{}}}", s.marks[i].count);
  }
  fmt::format_to(std::back_inserter(out),
                 "],\n\"gpu\":{{\"ranges_timed\":{},\"ranges_pending\":{},\"ranges_skipped\":{},"
                 "\"events_created\":{},\"source\":",
                 s.gpu.ranges_timed, s.gpu.ranges_pending, s.gpu.ranges_skipped,
                 s.gpu.events_created);
  json_string(out, s.gpu.source);
  out += ",\"note\":";
  json_string(out, s.gpu.note);
  fmt::format_to(std::back_inserter(out),
                 ",\"records\":{},\"records_dropped\":{},\"records_unattributed\":{},"
                 "\"records_late\":{},\"devices\":[",
                 s.gpu.records, s.gpu.records_dropped, s.gpu.records_unattributed,
                 s.gpu.records_late);
  for (std::size_t i = 0; i < s.gpu.devices.size(); ++i) {
    GpuDeviceStats const& d = s.gpu.devices[i];
    fmt::format_to(std::back_inserter(out),
                   "{}{{\"device\":{},\"kernels\":{},\"copies\":{},\"busy_ns\":{},\"span_ns\":{},"
                   "\"kernel_busy_ns\":{},\"copy_busy_ns\":{},\"copy_overlap_ns\":{}}}",
                   i == 0 ? "" : ",", d.device, d.kernels, d.copies, d.busy_ns, d.span_ns,
                   d.kernel_busy_ns, d.copy_busy_ns, d.copy_overlap_ns);
  }
  out += "],\"streams\":[";
  for (std::size_t i = 0; i < s.gpu.streams.size(); ++i) {
    GpuStreamStats const& st = s.gpu.streams[i];
    fmt::format_to(std::back_inserter(out),
                   "{}{{\"device\":{},\"stream\":{},\"kernels\":{},\"copies\":{},\"busy_ns\":{}}}",
                   i == 0 ? "" : ",", st.device, st.stream, st.kernels, st.copies, st.busy_ns);
  }
  out += "],\"error\":";
  json_string(out, s.gpu.error);
  out += "},\n\"advice\":[";
  for (std::size_t i = 0; i < s.advice.size(); ++i) {
    Advice const& a = s.advice[i];
    out += i == 0 ? "\n {\"rule\":" : ",\n {\"rule\":";
    json_string(out, a.rule);
    out += ",\"severity\":";
    json_string(out, a.severity);
    out += ",\"paths\":[";
    for (std::size_t k = 0; k < a.paths.size(); ++k) {
      if (k != 0) out += ',';
      json_string(out, a.paths[k]);
    }
    out += "],\"evidence\":";
    json_string(out, a.evidence);
    fmt::format_to(std::back_inserter(out), ",\"cost_ns\":{},\"suggestion\":", a.cost_ns);
    json_string(out, a.suggestion);
    out += '}';
  }
  out += "],\n\"advice_missing\":[";
  for (std::size_t i = 0; i < s.advice_missing.size(); ++i) {
    if (i != 0) out += ',';
    json_string(out, s.advice_missing[i]);
  }
  out += "]}\n";
  sink.flush();
}

inline std::string summary_json(ReportSnapshot const& s) {
  TextSink sink;
  summary_json(sink, s);
  return std::move(sink.buffer());
}

/// Appends `s` as one CSV field (RFC 4180: quoted when it holds a comma, quote or line break),
/// always valid UTF-8 (invalid bytes become U+FFFD), as JSON is.
inline void csv_field(std::string& out, std::string_view s) {
  std::string const text = valid_utf8(s);
  if (text.find_first_of(",\"\r\n") == std::string::npos) {
    out += text;
    return;
  }
  out += '"';
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

inline void csv_time(std::string& out, TimeStats const& t) {
  fmt::format_to(std::back_inserter(out), "{},{},{:.1f},{},{},{},{},{}", t.count, t.total_ns,
                 t.mean_ns, t.min_ns, t.p50_ns, t.p95_ns, t.max_ns, t.exact ? 1 : 0);
}

/// The summary as CSV: one row per merged path (scope "all") and per thread and path ("thread").
inline void summary_csv(TextSink& sink, ReportSnapshot const& s) {
  std::string& out = sink.buffer();
  out +=
      "scope,tid,thread,path,depth,count,total_ns,mean_ns,min_ns,p50_ns,p95_ns,max_ns,exact,"
      "self_ns,gpu_count,gpu_total_ns,gpu_mean_ns,gpu_min_ns,gpu_p50_ns,gpu_p95_ns,gpu_max_ns,"
      "gpu_exact,gpu_kernels,gpu_self_kernels,gpu_kernel_ns,gpu_busy_ns,gpu_self_busy_ns,"
      "gpu_span_ns,gpu_idle_ns,gpu_launch_p50_ns,gpu_h2d_bytes,gpu_d2h_bytes,gpu_d2d_bytes,"
      "gpu_memset_bytes,gpu_peak_bytes\n";
  auto row = [&](PathStats const& r, char const* scope, std::string const& tid,
                 std::string const& tname) {
    out += scope;
    out += ',';
    out += tid;
    out += ',';
    csv_field(out, tname);
    out += ',';
    csv_field(out, r.path);
    fmt::format_to(std::back_inserter(out), ",{},", r.depth);
    csv_time(out, r.cpu);
    fmt::format_to(std::back_inserter(out), ",{},", r.self_ns);
    csv_time(out, r.gpu);
    GpuWorkStats const& w = r.work;
    fmt::format_to(std::back_inserter(out), ",{},{},{},{},{},{},{},{},{},{},{},{},{}", w.kernels,
                   w.self_kernels, w.kernel_ns, w.busy_ns, w.self_busy_ns, w.span_ns, w.idle_ns,
                   w.launch_latency.p50_ns, w.h2d.bytes, w.d2h.bytes, w.d2d.bytes, w.memsets.bytes,
                   w.peak_bytes);
    out += '\n';
    sink.maybe_flush();
  };
  for (auto const& r : s.paths) row(r, "all", "", "");
  for (auto const& t : s.threads) {
    for (auto const& r : s.thread_paths) {
      if (r.thread == t.id) row(r, "thread", std::to_string(t.id), t.name);
    }
  }
  sink.flush();
}

inline std::string summary_csv(ReportSnapshot const& s) {
  TextSink sink;
  summary_csv(sink, s);
  return std::move(sink.buffer());
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
