// Internal: the report's machine-readable summaries of a snapshot — JSON (format
// "nsightkit-report", version 1; docs/report.md) and CSV, one row per path. Pure C++ (available
// in disabled builds, where snapshots are empty).
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/fmt_format.hpp>
#include <nsightkit/detail/json.hpp>
#include <nsightkit/detail/report/output/gpu_columns.hpp>
#include <nsightkit/detail/report/output/text_sink.hpp>
#include <nsightkit/detail/text.hpp>
#include <nsightkit/report_types.hpp>

#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

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
  fmt::format_to(std::back_inserter(out),
                 ",\"legacy_stream_work\":{},\"delegated_kernels\":{},\"delegated_kernel_ns\":{}}}",
                 w.legacy_stream_work, w.delegated_kernels, w.delegated_kernel_ns);
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
/// `nsightkit_version` is the version of nsightkit that made the snapshot (`nsightkit stats
/// --json` writes a saved report's again).
inline void summary_json(TextSink& sink, ReportSnapshot const& s,
                         std::string_view nsightkit_version = version_string) {
  std::string& out = sink.buffer();
  out += "{\"format\":\"nsightkit-report\",\"version\":1,\"nsightkit_version\":";
  json_string(out, nsightkit_version);
  fmt::format_to(
      std::back_inserter(out),
      ",\"rank\":{},\"pid\":{},\"forked_from\":{},\"run_ns\":{},\"captured_only\":{},\n\"paths\":",
      s.rank ? std::to_string(*s.rank) : std::string{"null"}, s.pid,
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
                 "\"records_late\":{},\"records_delegated\":{},\"devices\":[",
                 s.gpu.records, s.gpu.records_dropped, s.gpu.records_unattributed,
                 s.gpu.records_late, s.gpu.records_delegated);
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
                   "{}{{\"device\":{},\"stream\":{},\"kernels\":{},\"copies\":{},\"busy_ns\":{},"
                   "\"name\":",
                   i == 0 ? "" : ",", st.device, st.stream, st.kernels, st.copies, st.busy_ns);
    json_string(out, st.name);
    out += '}';
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

inline std::string summary_json(ReportSnapshot const& s,
                                std::string_view nsightkit_version = version_string) {
  TextSink sink;
  summary_json(sink, s, nsightkit_version);
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
