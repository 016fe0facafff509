// Internal: the report's text outputs made from a ReportSnapshot — the table, the summary JSON and
// CSV — and the JSON string/number writers the trace export shares. Pure C++ (available in
// disabled builds, where snapshots are empty); part of <nsightkit/report.hpp>.
#pragma once

#if !defined(NSIGHTKIT_DETAIL_REPORT_TYPES)
#error "internal header: include <nsightkit/report.hpp>"
#endif

#include <nsightkit/attributes.hpp>
#include <nsightkit/config.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {

// ---------------------------------------------------------------------------------------------
// JSON

/// Appends `s` as a JSON string literal: quotes, backslash and control characters escaped; bytes
/// that are not valid UTF-8 become U+FFFD, so the output is always valid JSON text.
inline void json_string(std::string& out, std::string_view s) {
  out += '"';
  std::size_t i = 0;
  auto const byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  while (i < s.size()) {
    unsigned char const c = byte(i);
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          if (c < 0x20 || c == 0x7F) {
            fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(c));
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    // Multi-byte sequence: validate (RFC 3629: no overlongs, no surrogates, <= U+10FFFF).
    std::size_t len = 0;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    }
    bool ok = len != 0 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k) {
      unsigned const b = byte(i + k);
      unsigned const l = k == 1 ? lo : 0x80u, h = k == 1 ? hi : 0xBFu;
      ok = b >= l && b <= h;
    }
    if (ok) {
      out.append(s.data() + i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    }
  }
  out += '"';
}

/// Appends nanoseconds as microseconds with three decimals ("12.345"), exactly (no floating point).
inline void json_micros(std::string& out, std::int64_t ns) {
  if (ns < 0) {
    out += '-';
    ns = -ns;
  }
  fmt::format_to(std::back_inserter(out), "{}.{:03}", ns / 1000, ns % 1000);
}

/// Appends a range's payload as a JSON number (null for a NaN or infinite double: JSON has none).
inline void json_payload(std::string& out, Payload const& p) {
  switch (p.kind()) {
    case PayloadKind::int64: fmt::format_to(std::back_inserter(out), "{}", p.as_int64()); break;
    case PayloadKind::uint64: fmt::format_to(std::back_inserter(out), "{}", p.as_uint64()); break;
    case PayloadKind::floating:
      if (std::isfinite(p.as_double())) {
        fmt::format_to(std::back_inserter(out), "{}", p.as_double());
      } else {
        out += "null";
      }
      break;
    case PayloadKind::none: out += "null"; break;
  }
}

// ---------------------------------------------------------------------------------------------
// Human-readable durations

/// "812 ns", "3.25 us", "12.3 ms", "1.23 s": three significant digits.
inline std::string format_duration(std::int64_t ns) {
  double const v = static_cast<double>(ns);
  auto three = [](double x, char const* unit) {
    if (x < 9.995) return fmt::format("{:.2f} {}", x, unit);
    if (x < 99.95) return fmt::format("{:.1f} {}", x, unit);
    return fmt::format("{:.0f} {}", x, unit);
  };
  if (ns < 1000 && ns > -1000) return fmt::format("{} ns", ns);
  if (v < 999.5e3) return three(v / 1e3, "us");
  if (v < 999.5e6) return three(v / 1e6, "ms");
  return three(v / 1e9, "s");
}

inline std::string format_percentile(std::int64_t ns, bool exact) {
  return exact ? format_duration(ns) : "~" + format_duration(ns);
}

// ---------------------------------------------------------------------------------------------
// Table

inline bool any_gpu(std::vector<PathStats> const& rows) noexcept {
  return std::any_of(rows.begin(), rows.end(), [](PathStats const& r) { return r.gpu.count != 0; });
}

/// Appends one tree-indented table of `rows` (already in tree order, siblings by total).
inline void format_rows(std::string& out, std::vector<PathStats> const& rows, std::int64_t run_ns) {
  bool const gpu = any_gpu(rows);
  std::size_t width = 4;
  for (auto const& r : rows) width = std::max(width, 2 * r.depth + r.name.size());
  width = std::min<std::size_t>(width, 60);
  fmt::format_to(std::back_inserter(out),
                 "{:<{}} {:>8} {:>10} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10}", "path", width,
                 "calls", "total", "%run", "self", "mean", "p50", "p95", "max");
  if (gpu)
    fmt::format_to(std::back_inserter(out), "  | {:>10} {:>10} {:>10} {:>10}", "GPU total",
                   "GPU mean", "GPU p95", "GPU max");
  out += '\n';
  for (auto const& r : rows) {
    std::string label(2 * r.depth, ' ');
    label += r.name;
    if (label.size() > width) label = label.substr(0, width - 3) + "...";
    std::string pct = "-";
    if (run_ns > 0) {
      pct = fmt::format("{:.1f}%",
                        100.0 * static_cast<double>(r.cpu.total_ns) / static_cast<double>(run_ns));
    }
    fmt::format_to(std::back_inserter(out),
                   "{:<{}} {:>8} {:>10} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10}", label, width,
                   r.cpu.count, format_duration(r.cpu.total_ns), pct, format_duration(r.self_ns),
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
    out += '\n';
  }
}

inline void format_time_line(std::string& out, TimeStats const& t) {
  fmt::format_to(std::back_inserter(out), "{} calls, total {}, mean {}, p50 {}, p95 {}, max {}",
                 t.count, format_duration(t.total_ns),
                 format_duration(static_cast<std::int64_t>(t.mean_ns + 0.5)),
                 format_percentile(t.p50_ns, t.exact), format_percentile(t.p95_ns, t.exact),
                 format_duration(t.max_ns));
}

inline std::string thread_label(ThreadStats const& t) {
  std::string s = std::to_string(t.id);
  if (!t.name.empty()) s += " \"" + t.name + "\"";
  return s;
}

/// The whole table: header, merged rows, optional per-thread rows, steps, start/end ranges,
/// marks, threads and notes.
inline std::string format_table(ReportSnapshot const& s, bool per_thread) {
  std::string out;
  std::uint64_t ranges = 0;
  for (auto const& t : s.threads) ranges += t.ranges;
  fmt::format_to(std::back_inserter(out),
                 "nsightkit report ({}pid {}): {} of run time, {} thread{}, {} ranges{}\n",
                 s.rank ? fmt::format("rank {}, ", *s.rank) : std::string{}, s.pid,
                 format_duration(s.run_ns), s.threads.size(), s.threads.size() == 1 ? "" : "s",
                 ranges, s.captured_only ? ", captured steps only" : "");
  out +=
      "CPU wall time per range path, all threads merged; %run = total / run time; self = total - "
      "children;\n"
      "percentiles by nearest rank, ~ = approximate (log histogram past the exact-sample "
      "limit)\n\n";
  if (s.paths.empty()) {
    out += "(no ranges recorded)\n";
  } else {
    format_rows(out, s.paths, s.run_ns);
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
        format_rows(out, rows, s.run_ns);
      }
    }
  }
  if (s.steps.count != 0) {
    out += "\ncapture-window steps: ";
    format_time_line(out, s.steps);
    out += '\n';
  }
  if (!s.start_end.empty()) {
    out += "\nstart/end ranges (by name, not part of paths):\n";
    for (auto const& r : s.start_end) {
      fmt::format_to(std::back_inserter(out),
                     "  {}{}: ", r.domain.empty() || r.domain == "nsightkit" ? "" : r.domain + "@",
                     r.name);
      format_time_line(out, r.time);
      out += '\n';
    }
  }
  if (!s.marks.empty()) {
    out += "\nmarks:\n";
    for (auto const& m : s.marks) {
      fmt::format_to(std::back_inserter(out), "  {}{}: {}\n",
                     m.domain.empty() || m.domain == "nsightkit" ? "" : m.domain + "@", m.name,
                     m.count);
    }
  }
  out += "\nthreads:";
  for (auto const& t : s.threads) {
    fmt::format_to(std::back_inserter(out), " {}{} {} ranges;", thread_label(t),
                   t.exited ? " (exited)" : "", t.ranges);
  }
  out += '\n';
  std::uint64_t dropped = 0, overflow = 0;
  for (auto const& t : s.threads) {
    dropped += t.trace_dropped;
    overflow += t.paths_over_limit;
  }
  if (overflow != 0) {
    fmt::format_to(
        std::back_inserter(out),
        "note: {} ranges beyond the per-thread path limit were counted under \"(other paths)\"\n",
        overflow);
  }
  if (dropped != 0) {
    fmt::format_to(std::back_inserter(out),
                   "note: {} trace events beyond the per-thread limit were not kept\n", dropped);
  }
  if (s.gpu.ranges_timed != 0 || s.gpu.ranges_pending != 0 || !s.gpu.error.empty()) {
    fmt::format_to(
        std::back_inserter(out), "GPU: {} ranges timed with CUDA events ({} events created){}{}\n",
        s.gpu.ranges_timed, s.gpu.events_created,
        s.gpu.ranges_pending != 0 ? fmt::format(", {} still pending", s.gpu.ranges_pending)
                                  : std::string{},
        s.gpu.ranges_skipped != 0 ? fmt::format(", {} skipped", s.gpu.ranges_skipped)
                                  : std::string{});
    if (!s.gpu.error.empty()) out += "GPU timing stopped: " + s.gpu.error + "\n";
  }
  return out;
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
  out += '}';
}

inline void json_rows(std::string& out, std::vector<PathStats> const& rows, std::uint32_t thread,
                      bool filter) {
  out += '[';
  bool first = true;
  for (auto const& r : rows) {
    if (filter && r.thread != thread) continue;
    if (!first) out += ',';
    first = false;
    out += "\n  ";
    json_row(out, r);
  }
  out += ']';
}

/// The machine-readable summary as JSON (format "nsightkit-report", version 1).
inline std::string summary_json(ReportSnapshot const& s) {
  std::string out;
  fmt::format_to(
      std::back_inserter(out),
      "{{\"format\":\"nsightkit-report\",\"version\":1,\"nsightkit_version\":\"{}\",\"rank\":{},"
      "\"pid\":{},\"run_ns\":{},\"captured_only\":{},\n\"paths\":",
      version_string, s.rank ? std::to_string(*s.rank) : std::string{"null"}, s.pid, s.run_ns,
      s.captured_only ? "true" : "false");
  json_rows(out, s.paths, 0, false);
  out += ",\n\"threads\":[";
  for (std::size_t i = 0; i < s.threads.size(); ++i) {
    auto const& t = s.threads[i];
    if (i != 0) out += ',';
    fmt::format_to(std::back_inserter(out), "\n {{\"tid\":{},\"name\":", t.id);
    json_string(out, t.name);
    fmt::format_to(std::back_inserter(out),
                   ",\"exited\":{},\"ranges\":{},\"trace_events_dropped\":{},\"paths_over_limit\":{"
                   "},\"paths\":",
                   t.exited ? "true" : "false", t.ranges, t.trace_dropped, t.paths_over_limit);
    json_rows(out, s.thread_paths, t.id, true);
    out += '}';
  }
  out += "],\n\"steps\":";
  json_time(out, s.steps);
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
                 "\"events_created\":{},"
                 "\"error\":",
                 s.gpu.ranges_timed, s.gpu.ranges_pending, s.gpu.ranges_skipped,
                 s.gpu.events_created);
  json_string(out, s.gpu.error);
  out += "}}\n";
  return out;
}

/// Appends `s` as one CSV field (RFC 4180: quoted when it holds a comma, quote or line break).
inline void csv_field(std::string& out, std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) {
    out += s;
    return;
  }
  out += '"';
  for (char c : s) {
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
inline std::string summary_csv(ReportSnapshot const& s) {
  std::string out =
      "scope,tid,thread,path,depth,count,total_ns,mean_ns,min_ns,p50_ns,p95_ns,max_ns,exact,self_"
      "ns,"
      "gpu_count,gpu_total_ns,gpu_mean_ns,gpu_min_ns,gpu_p50_ns,gpu_p95_ns,gpu_max_ns,gpu_exact\n";
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
    out += '\n';
  };
  for (auto const& r : s.paths) row(r, "all", "", "");
  for (auto const& t : s.threads) {
    for (auto const& r : s.thread_paths) {
      if (r.thread == t.id) row(r, "thread", std::to_string(t.id), t.name);
    }
  }
  return out;
}

/// Writes `text` to `path`; false (with a message on stderr) when that fails.
inline bool write_text_file(std::string const& path, std::string_view text,
                            char const* what) noexcept {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    std::fprintf(stderr, "nsightkit report: cannot write the %s to '%s': %s\n", what, path.c_str(),
                 std::strerror(errno));
    return false;
  }
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok)
    std::fprintf(stderr, "nsightkit report: writing the %s to '%s' failed\n", what, path.c_str());
  return ok;
}

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
