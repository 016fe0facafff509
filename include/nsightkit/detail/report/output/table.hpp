// Internal: the report's table — the tree-indented paths sorted by total, with %run, self and
// percentiles, then steps, start/end ranges, marks, threads, advice and notes. Pure C++
// (available in disabled builds, where snapshots are empty).
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/fmt_format.hpp>
#include <nsightkit/detail/format.hpp>
#include <nsightkit/detail/report/output/gpu_columns.hpp>
#include <nsightkit/detail/report/output/text_sink.hpp>
#include <nsightkit/detail/text.hpp>
#include <nsightkit/report_types.hpp>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

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
  if (g.records_delegated != 0)
    fmt::format_to(std::back_inserter(out),
                   ", {} launched by a thread without ranges on a stream a range had made "
                   "current (counted for that range)",
                   g.records_delegated);
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
  // Streams the program named (nvtxNameCudaStream): their own totals, so a name leads somewhere.
  for (GpuStreamStats const& st : g.streams) {
    if (st.name.empty()) continue;
    fmt::format_to(std::back_inserter(out),
                   "GPU stream {} \"{}\" (device {}): busy {}, {} kernels, {} copies and memsets\n",
                   st.stream, printable(st.name), st.device, format_duration(st.busy_ns),
                   st.kernels, st.copies);
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
  // Each thread named as the per-thread sections name it (OS id, name), with its count of ranges.
  out += "\nranges per thread:";
  if (s.threads.empty()) out += " none";
  char const* sep = " ";
  for (auto const& t : s.threads) {
    fmt::format_to(std::back_inserter(out), "{}thread {}{}: {}", sep, thread_label(t),
                   t.exited ? " (exited)" : "", t.ranges);
    sep = "; ";
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

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
