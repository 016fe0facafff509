// Internal: the report's configuration grammar (NSIGHTKIT_REPORT) and output file names. Pure C++,
// in enabled and disabled builds alike.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/process.hpp>
#include <nsightkit/detail/report/signal_names.hpp>
#include <nsightkit/detail/text.hpp>
#include <nsightkit/report_types.hpp>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// What the grammar accepts, quoted in every parse error.
inline constexpr char const report_grammar[] =
    "a comma-separated list of: table[=stderr|stdout|PATH], json=PATH, csv=PATH, "
    "trace=PATH[.gz], html=PATH, trace-size=BYTES[k|M|G], trace-schema=chrome|kineto, "
    "window-only[=on|off], threads[=on|off], gpu=on|off|auto|events|cupti, gpu-depth=N, "
    "advice=on|off|all, samples=N, trace-events=N, paths=N, depth=N, "
    "domains=all|NAME[+NAME...], signals=off|SIG[+SIG...], trigger-signal=off|SIG, "
    "trigger-file=PATH, snapshot-every=off|DURATION[ms|s|m|h], strict[=on|off]; or an off word "
    "(0, off, none, false, no: report off)";

/// Deepest nesting the report keeps as separate paths by default (ReportOptions::max_depth).
inline constexpr std::size_t default_max_depth = 128;

/// Names two outputs that would write the same file ("" when none do): the second would
/// silently replace the first.
inline std::string output_clash(ReportOptions const& o) {
  std::pair<char const*, std::string const*> const files[] = {{"table", &o.table},
                                                              {"json", &o.json},
                                                              {"csv", &o.csv},
                                                              {"trace", &o.trace},
                                                              {"html", &o.html}};
  constexpr std::size_t n = sizeof files / sizeof files[0];
  for (std::size_t i = 0; i < n; ++i) {
    std::string const& a = *files[i].second;
    if (a.empty() || (i == 0 && (a == "stderr" || a == "stdout"))) continue;
    for (std::size_t j = i + 1; j < n; ++j) {
      if (*files[j].second == a) {
        return std::string{files[i].first} + " and " + files[j].first + " both write " +
               quote_value(a) + " (give each output its own file)";
      }
    }
  }
  return {};
}

/// Parses a byte count with an optional binary suffix ("64M", "512k", "1G", "100000"); 0 means no
/// limit, else at least 4 KiB (a trace smaller than its metadata holds nothing).
inline bool parse_size(std::string_view v, std::size_t& out) noexcept {
  std::uint64_t scale = 1;
  if (!v.empty()) {
    char const c = v.back();
    scale = c == 'k' || c == 'K'   ? 1u << 10
            : c == 'm' || c == 'M' ? 1u << 20
            : c == 'g' || c == 'G' ? 1u << 30
                                   : 1;
    if (scale != 1) v.remove_suffix(1);
  }
  std::uint64_t n = 0;
  if (!parse_count(v, 0, (std::uint64_t{1} << 50) / scale, n)) return false;
  n *= scale;
  if (n != 0 && n < 4096) return false;
  if (n > std::numeric_limits<std::size_t>::max()) return false;
  out = static_cast<std::size_t>(n);
  return true;
}

/// Parses the value of `domains=`: "all" (every domain: an empty list) or names joined by '+'
/// ("nsightkit+CCCL"). False for an empty name.
inline bool parse_domains(std::string_view v, std::vector<std::string>& out) {
  out.clear();
  if (equals_word(v, "all")) return true;
  std::size_t pos = 0;
  while (pos <= v.size()) {
    std::size_t const plus = v.find('+', pos);
    std::string_view const name =
        trim(v.substr(pos, plus == std::string_view::npos ? std::string_view::npos : plus - pos));
    if (name.empty()) return false;
    out.emplace_back(name);
    pos = plus == std::string_view::npos ? v.size() + 1 : plus + 1;
  }
  return true;
}

/// Parses a duration: a number with ms, s, m or h ("250ms", "30s", "5m", "1h"; a bare number is
/// seconds), from 10 ms to 30 days; an off word is 0 (none).
inline bool parse_duration(std::string_view v, std::chrono::milliseconds& out) noexcept {
  v = trim(v);
  if (is_off_word(v)) {
    out = std::chrono::milliseconds{0};
    return true;
  }
  std::uint64_t scale = 1000;
  if (v.size() > 2 && equals_word(v.substr(v.size() - 2), "ms")) {
    scale = 1;
    v.remove_suffix(2);
  } else if (!v.empty() && (v.back() == 's' || v.back() == 'm' || v.back() == 'h')) {
    scale = v.back() == 's' ? 1000 : v.back() == 'm' ? 60'000 : 3'600'000;
    v.remove_suffix(1);
  }
  constexpr std::uint64_t max_ms = std::uint64_t{30} * 24 * 3'600'000;
  std::uint64_t n = 0;
  if (!parse_count(trim(v), 0, max_ms, n) || n * scale > max_ms || n * scale < 10) return false;
  out = std::chrono::milliseconds{static_cast<std::int64_t>(n * scale)};
  return true;
}

/// Parses the value of `signals=`: an off word (none) or signal names joined by '+'
/// ("TERM+USR1"). False, naming the bad part in `why`, for a signal the report does not handle.
inline bool parse_signals(std::string_view v, std::vector<int>& out, std::string& why) {
  out.clear();
  if (is_off_word(v)) return true;
  std::size_t pos = 0;
  while (pos <= v.size()) {
    std::size_t const plus = v.find('+', pos);
    std::string_view const name =
        trim(v.substr(pos, plus == std::string_view::npos ? std::string_view::npos : plus - pos));
    int const n = signal_number(name);
    if (n == 0) {
      why = quote_value(name) + " is not a signal the report handles (" + handled_signal_names() +
            ")";
      return false;
    }
    for (int const seen : out) {
      if (seen == n) {
        why = signal_name(n) + " is given twice";
        return false;
      }
    }
    out.push_back(n);
    pos = plus == std::string_view::npos ? v.size() + 1 : plus + 1;
  }
  return true;
}

/// Names a signal that `signals=` and `trigger-signal=` both claim ("" when none does).
inline std::string signal_clash(ReportOptions const& o) {
  for (int const s : o.signals) {
    if (s == o.trigger_signal) {
      return signal_name(s) +
             " is both in signals= (write the outputs) and trigger-signal= "
             "(request a capture); give it one job";
    }
  }
  return {};
}

/**
 * Parses a report specification (the value of NSIGHTKIT_REPORT) into `out`.
 * `on` tells whether the spec turns the report on (an empty spec or an off word turn it off).
 * Returns false with a message naming the offending item in `error`.
 */
inline bool parse_report_spec(std::string_view spec, ReportOptions& out, bool& on,
                              std::string& error) {
  ReportOptions o;
  o.table.clear();
  spec = trim(spec);
  if (spec.empty() || is_off_word(spec)) {
    on = false;
    out = o;
    return true;
  }
  auto fail = [&](std::string const& what) {
    error = what + "; expected " + report_grammar;
    return false;
  };
  enum Key {
    table,
    json,
    csv,
    trace,
    window_only,
    threads,
    gpu,
    samples,
    events,
    paths,
    depth,
    gpu_depth,
    advice,
    domains,
    signals,
    trigger_signal,
    trigger_file,
    snapshot_every,
    strict,
    count
  };
  static constexpr char const* names[count] = {
      "table",  "json",    "csv",          "trace",          "window-only",  "threads",
      "gpu",    "samples", "trace-events", "paths",          "depth",        "gpu-depth",
      "advice", "domains", "signals",      "trigger-signal", "trigger-file", "snapshot-every",
      "strict"};
  bool seen[count] = {};
  bool seen_html = false, seen_trace_size = false, seen_schema = false;
  std::size_t pos = 0;
  while (pos <= spec.size()) {
    std::size_t const comma = spec.find(',', pos);
    std::string_view const raw =
        spec.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    pos = comma == std::string_view::npos ? spec.size() + 1 : comma + 1;
    std::string_view const item = trim(raw);
    if (item.empty()) return fail("empty item (two commas in a row, or a comma at an end)");
    std::size_t const eq = item.find('=');
    std::string_view const word = trim(item.substr(0, eq));
    bool const has_value = eq != std::string_view::npos;
    std::string_view const value = has_value ? trim(item.substr(eq + 1)) : std::string_view{};
    std::string const quoted = quote_value(item);
    if (has_value && value.empty()) return fail("empty value in " + quoted);
    if (!has_value && is_off_word(word)) {
      return fail(quoted + " turns the report off and cannot be combined with other items");
    }
    if (word == "html" || word == "trace-size") {  // the HTML page and the trace's size cap
      bool& once = word == "html" ? seen_html : seen_trace_size;
      if (once) {
        error = "'" + std::string{word} + "' given twice; expected " + report_grammar;
        return false;
      }
      once = true;
      if (!has_value) {
        return fail(quoted + (word == "html" ? " needs a file path (html=PATH)"
                                             : " needs a size (trace-size=BYTES, e.g. 64M)"));
      }
      if (word == "html") {
        o.html = std::string{value};
      } else if (!parse_size(value, o.max_trace_bytes)) {
        return fail("bad size in " + quoted +
                    " (bytes, with k, M or G for 2^10, 2^20, 2^30; at least 4k; 0: no limit)");
      }
      continue;
    }
    if (word == "trace-schema") {  // the trace's conventions: nsightkit's or Kineto's (HTA)
      if (seen_schema) {
        error = "'trace-schema' given twice; expected " + std::string{report_grammar};
        return false;
      }
      seen_schema = true;
      if (has_value && equals_word(value, "chrome")) {
        o.trace_schema = TraceSchema::chrome;
      } else if (has_value && equals_word(value, "kineto")) {
        o.trace_schema = TraceSchema::kineto;
      } else {
        return fail((has_value ? "bad value in " : "no value in ") + quoted +
                    " (use chrome or kineto)");
      }
      continue;
    }
    int key = count;
    if (!has_value && is_on_word(word)) {
      key = table;  // "1", "on", ...: the default table
    } else {
      for (int k = 0; k < count; ++k) {
        if (word == names[k]) key = k;
      }
    }
    bool const former = word == "captured";  // window-only's former spelling, still accepted
    if (former) key = window_only;
    if (key == count) return fail("unknown item " + quoted);
    if (seen[key]) {
      error = "'" + std::string{names[key]} + "' given twice; expected " + report_grammar;
      return false;
    }
    seen[key] = true;
    if (former) {
      std::fprintf(stderr,
                   "nsightkit: NSIGHTKIT_REPORT=%s: 'captured' is now spelled 'window-only' "
                   "(only ranges begun while a capture window is active); the old spelling "
                   "still works\n",
                   quote_value(spec).c_str());
    }
    switch (key) {
      case table: o.table = has_value ? std::string{value} : std::string{"stderr"}; break;
      case json:
      case csv:
      case trace:
        if (!has_value) {
          return fail(quoted + " needs a file path (" + std::string{names[key]} + "=PATH)");
        }
        (key == json ? o.json : key == csv ? o.csv : o.trace) = std::string{value};
        break;
      case gpu:
        if (has_value && (equals_word(value, "auto") || equals_word(value, "events") ||
                          equals_word(value, "cupti"))) {
          o.gpu = true;
          o.gpu_source = equals_word(value, "auto")     ? GpuSourceKind::automatic
                         : equals_word(value, "events") ? GpuSourceKind::events
                                                        : GpuSourceKind::cupti;
          break;
        }
        if (has_value && !parse_switch(value, o.gpu)) {
          return fail("bad value in " + quoted + " (use on, off, auto, events or cupti)");
        }
        break;
      case advice:
        if (has_value && equals_word(value, "all")) {
          o.advice = AdviceMode::all;
        } else {
          bool v = true;
          if (has_value && !parse_switch(value, v)) {
            return fail("bad value in " + quoted + " (use on, off or all)");
          }
          o.advice = v ? AdviceMode::on : AdviceMode::off;
        }
        break;
      case domains:
        if (!has_value) {
          return fail(quoted + " needs a value (domains=all, or domain names joined by '+')");
        }
        if (!parse_domains(value, o.domains)) {
          return fail("bad value in " + quoted +
                      " (all, or names joined by '+': nsightkit, default, or a domain's name)");
        }
        break;
      case window_only:
      case threads:
      case strict: {
        bool v = true;
        if (has_value && !parse_switch(value, v)) {
          return fail("bad switch value in " + quoted + " (use on or off)");
        }
        (key == window_only ? o.captured_only : key == threads ? o.per_thread : o.strict) = v;
        break;
      }
      case signals: {
        if (!has_value) {
          return fail(quoted + " needs a value (signals=off, or signal names joined by '+')");
        }
        std::string why;
        if (!parse_signals(value, o.signals, why))
          return fail("bad value in " + quoted + ": " + why);
        break;
      }
      case trigger_signal:
        if (!has_value) return fail(quoted + " needs a value (trigger-signal=USR2, or off)");
        o.trigger_signal = is_off_word(value) ? 0 : signal_number(value);
        if (o.trigger_signal == 0 && !is_off_word(value)) {
          return fail("bad value in " + quoted + ": not a signal the report handles (" +
                      handled_signal_names() + ")");
        }
        break;
      case trigger_file:
        if (!has_value) return fail(quoted + " needs a file path (trigger-file=PATH)");
        o.trigger_file = std::string{value};
        break;
      case snapshot_every:
        if (!has_value || !parse_duration(value, o.snapshot_every)) {
          return fail("bad duration in " + quoted +
                      " (a number with ms, s, m or h, e.g. 30s; from 10ms to 30 days; or off)");
        }
        break;
      default: {  // samples, trace-events, paths, depth, gpu-depth
        if (!has_value) {
          return fail(quoted + " needs a number (" + std::string{names[key]} + "=N)");
        }
        std::uint64_t n = 0;
        std::uint64_t const min = key == samples || key == gpu_depth ? 0 : 1;
        std::uint64_t const max = std::uint64_t{1} << 30;
        if (!parse_count(value, min, max, n)) {
          return fail("bad number in " + quoted + " (an integer from " + std::to_string(min) +
                      " to " + std::to_string(max) + ")");
        }
        auto const v = static_cast<std::size_t>(n);
        if (key == samples) o.exact_samples = v;
        if (key == events) o.max_trace_events = v;
        if (key == paths) o.max_paths = v;
        if (key == depth) o.max_depth = v;
        if (key == gpu_depth) o.gpu_depth = v;
      }
    }
  }
  // Modifiers alone ("window-only") still mean "report": the table on stderr.
  if (o.table.empty() && o.json.empty() && o.csv.empty() && o.trace.empty() && o.html.empty())
    o.table = "stderr";
  std::string clash = output_clash(o);
  if (clash.empty()) clash = signal_clash(o);
  if (!clash.empty()) return fail(clash);
  on = true;
  out = std::move(o);
  return true;
}

/// Inserts `tag` before the extension of the last path component ("out.json" + ".rank3" gives
/// "out.rank3.json"; "out" gives "out.rank3"; a dot-file like ".trace" gets it at the end).
inline void insert_before_extension(std::string& path, std::string const& tag) {
  std::size_t const slash = path.find_last_of("/\\");
  std::size_t const base = slash == std::string::npos ? 0 : slash + 1;
  std::size_t const dot = path.find_last_of('.');
  if (dot == std::string::npos || dot <= base) {
    path += tag;
  } else {
    path.insert(dot, tag);
  }
}

/// The file name an output really gets: "{rank}", "{pid}" and "{host}" are replaced; without
/// "{rank}", a rank (`rank` >= 0; negative: none) goes before the extension ("out.json" becomes
/// "out.rank3.json"), or, for a rank among the processes of one host only (`local_rank` >= 0),
/// the host's name and that rank ("out.gpu7.local3.json": such ranks repeat on every host);
/// without "{pid}", a child forked from a process that runs the report gets ".pidN" there too, so
/// parent and child never write one file.
inline std::string expand_output_path(std::string_view path, int rank, long pid,
                                      bool forked_child = false, int local_rank = -1,
                                      std::string_view host = {}) {
  std::string out;
  bool had_rank_field = false, had_pid_field = false;
  for (std::size_t i = 0; i < path.size();) {
    if (path.compare(i, 6, "{rank}") == 0) {
      out += std::to_string(rank >= 0 ? rank : local_rank >= 0 ? local_rank : 0);
      had_rank_field = true;
      i += 6;
    } else if (path.compare(i, 5, "{pid}") == 0) {
      out += std::to_string(pid);
      had_pid_field = true;
      i += 5;
    } else if (path.compare(i, 6, "{host}") == 0) {
      out += host.empty() ? std::string{"localhost"} : std::string{host};
      i += 6;
    } else {
      out += path[i++];
    }
  }
  std::string tag;
  if (rank >= 0 && !had_rank_field) {
    tag += ".rank" + std::to_string(rank);
  } else if (rank < 0 && local_rank >= 0 && !had_rank_field) {
    tag += "." + std::string{host.empty() ? std::string_view{"localhost"} : host} + ".local" +
           std::to_string(local_rank);
  }
  if (forked_child && !had_pid_field) tag += ".pid" + std::to_string(pid);
  if (!tag.empty()) insert_before_extension(out, tag);
  return out;
}

/// expand_output_path() for this process.
inline std::string output_path_here(std::string_view path) {
  auto const local = local_launcher_rank();
  bool const host = local || path.find("{host}") != std::string_view::npos;
  return expand_output_path(path, launcher_rank_or_none(), process_id(),
                            forked_from.load(std::memory_order_relaxed) != 0,
                            local ? local->rank : -1, host ? host_name() : std::string{});
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
