// Internal: the report's configuration grammar (NSIGHTKIT_REPORT), launcher ranks and output
// file names. Pure C++; part of <nsightkit/report.hpp>, which includes it after defining the
// public types (ReportOptions) it fills in. Not a header to include on its own.
#pragma once

#if !defined(NSIGHTKIT_DETAIL_REPORT_TYPES)
#error "internal header: include <nsightkit/report.hpp>"
#endif

#include <nsightkit/config.hpp>
#include <nsightkit/detail/text.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#if defined(_WIN32)
#include <process.h>
#else
#include <unistd.h>
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {

/// What the grammar accepts, quoted in every parse error.
inline constexpr char const report_grammar[] =
    "a comma-separated list of: table[=stderr|stdout|PATH], json=PATH, csv=PATH, trace=PATH, "
    "captured, threads, gpu=on|off, samples=N, trace-events=N, paths=N; or one of 0, off, none "
    "(report off)";

/// Parses an unsigned decimal integer in [min, max]; false on anything else.
inline bool parse_count(std::string_view s, std::size_t min, std::size_t max,
                        std::size_t& out) noexcept {
  if (s.empty() || s.size() > 19) return false;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10u + static_cast<std::uint64_t>(c - '0');
  }
  if (v < min || v > max) return false;
  out = static_cast<std::size_t>(v);
  return true;
}

/// Parses on/off style switches.
inline bool parse_switch(std::string_view s, bool& out) noexcept {
  if (s == "on" || s == "1" || s == "true" || s == "yes") {
    out = true;
    return true;
  }
  if (s == "off" || s == "0" || s == "false" || s == "no") {
    out = false;
    return true;
  }
  return false;
}

/**
 * Parses a report specification (the value of NSIGHTKIT_REPORT) into `out`.
 * `on` tells whether the spec turns the report on ("", "0", "off", "none", "false" turn it off).
 * Returns false with a message naming the offending item in `error`.
 */
inline bool parse_report_spec(std::string_view spec, ReportOptions& out, bool& on,
                              std::string& error) {
  ReportOptions o;
  o.table.clear();
  spec = trim(spec);
  if (spec.empty() || spec == "0" || spec == "off" || spec == "none" || spec == "false" ||
      spec == "no") {
    on = false;
    out = o;
    return true;
  }
  bool seen_table = false, seen_json = false, seen_csv = false, seen_trace = false;
  bool seen_captured = false, seen_threads = false, seen_gpu = false, seen_samples = false;
  bool seen_events = false, seen_paths = false;
  auto fail = [&](std::string const& what) {
    error = what + "; expected " + report_grammar;
    return false;
  };
  auto once = [&](bool& seen, std::string_view key) {
    if (seen) {
      error = "'" + std::string{key} + "' given twice; expected " + report_grammar;
      return false;
    }
    seen = true;
    return true;
  };
  std::size_t pos = 0;
  while (pos <= spec.size()) {
    std::size_t const comma = spec.find(',', pos);
    std::string_view const raw =
        spec.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    pos = comma == std::string_view::npos ? spec.size() + 1 : comma + 1;
    std::string_view const item = trim(raw);
    if (item.empty()) return fail("empty item (two commas in a row, or a comma at an end)");
    std::size_t const eq = item.find('=');
    std::string_view const key = trim(item.substr(0, eq));
    bool const has_value = eq != std::string_view::npos;
    std::string_view const value = has_value ? trim(item.substr(eq + 1)) : std::string_view{};
    std::string const quoted = "'" + std::string{item} + "'";
    if (has_value && value.empty()) return fail("empty value in " + quoted);

    if (!has_value && (key == "1" || key == "on" || key == "true" || key == "yes")) {
      if (!once(seen_table, "table")) return false;
      o.table = "stderr";
    } else if (key == "0" || key == "off" || key == "none" || key == "false" || key == "no") {
      return fail(quoted + " turns the report off and cannot be combined with other items");
    } else if (key == "table") {
      if (!once(seen_table, "table")) return false;
      o.table = has_value ? std::string{value} : std::string{"stderr"};
    } else if (key == "json" || key == "csv" || key == "trace") {
      if (!has_value) return fail(quoted + " needs a file path (" + std::string{key} + "=PATH)");
      if (key == "json") {
        if (!once(seen_json, key)) return false;
        o.json = std::string{value};
      } else if (key == "csv") {
        if (!once(seen_csv, key)) return false;
        o.csv = std::string{value};
      } else {
        if (!once(seen_trace, key)) return false;
        o.trace = std::string{value};
      }
    } else if (key == "captured" || key == "threads" || key == "gpu") {
      bool v = true;
      if (has_value && !parse_switch(value, v))
        return fail("bad switch value in " + quoted + " (use on or off)");
      if (key == "captured") {
        if (!once(seen_captured, key)) return false;
        o.captured_only = v;
      } else if (key == "threads") {
        if (!once(seen_threads, key)) return false;
        o.per_thread = v;
      } else {
        if (!once(seen_gpu, key)) return false;
        o.gpu = v;
      }
    } else if (key == "samples" || key == "trace-events" || key == "paths") {
      if (!has_value) return fail(quoted + " needs a number (" + std::string{key} + "=N)");
      std::size_t n = 0;
      std::size_t const min = key == "samples" ? 0 : 1;
      std::size_t const max = std::size_t{1} << 30;
      if (!parse_count(value, min, max, n)) {
        return fail("bad number in " + quoted + " (an integer from " + std::to_string(min) +
                    " to " + std::to_string(max) + ")");
      }
      if (key == "samples") {
        if (!once(seen_samples, key)) return false;
        o.exact_samples = n;
      } else if (key == "trace-events") {
        if (!once(seen_events, key)) return false;
        o.max_trace_events = n;
      } else {
        if (!once(seen_paths, key)) return false;
        o.max_paths = n;
      }
    } else {
      return fail("unknown item " + quoted);
    }
  }
  // Modifiers alone ("captured") still mean "report": the table on stderr.
  if (o.table.empty() && o.json.empty() && o.csv.empty() && o.trace.empty()) o.table = "stderr";
  on = true;
  out = std::move(o);
  return true;
}

/// The id of this process.
inline long process_id() noexcept {
#if defined(_WIN32)
  return static_cast<long>(_getpid());
#else
  return static_cast<long>(::getpid());
#endif
}

/// The launcher variables that carry a process rank, in order of precedence.
inline constexpr char const* rank_variables[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID",
                                                 "RANK", "LOCAL_RANK"};

/// A rank and the variable it came from.
struct LauncherRank {
  int rank;
  char const* variable;
};

/// The rank of this process, or -1.
inline int launcher_rank_or_none() noexcept;

/// The rank of this process from the first launcher variable that holds a non-negative integer.
/// A variable that is set to anything else is reported once on stderr and skipped.
inline std::optional<LauncherRank> launcher_rank() noexcept {
  for (char const* name : rank_variables) {
    char const* value = std::getenv(name);
    if (value == nullptr || *value == '\0') continue;
    std::size_t n = 0;
    if (parse_count(trim(value), 0, static_cast<std::size_t>(std::numeric_limits<int>::max()), n)) {
      return LauncherRank{static_cast<int>(n), name};
    }
    static bool warned = false;  // a benign race at worst prints twice
    if (!warned) {
      warned = true;
      std::fprintf(stderr, "nsightkit report: ignoring %s='%s' (not a non-negative integer rank)\n",
                   name, value);
    }
  }
  return std::nullopt;
}

/// The file name an output really gets: "{rank}" and "{pid}" are replaced; without "{rank}", a
/// rank (`rank` >= 0; negative: none) is inserted before the extension of the last path component
/// ("out.json" becomes "out.rank3.json", "out" becomes "out.rank3").
inline std::string expand_output_path(std::string_view path, int rank, long pid) {
  std::string out;
  bool had_rank_field = false;
  for (std::size_t i = 0; i < path.size();) {
    if (path.compare(i, 6, "{rank}") == 0) {
      out += std::to_string(rank >= 0 ? rank : 0);
      had_rank_field = true;
      i += 6;
    } else if (path.compare(i, 5, "{pid}") == 0) {
      out += std::to_string(pid);
      i += 5;
    } else {
      out += path[i++];
    }
  }
  if (rank >= 0 && !had_rank_field) {
    std::size_t const slash = out.find_last_of("/\\");
    std::size_t const base = slash == std::string::npos ? 0 : slash + 1;
    std::size_t const dot = out.find_last_of('.');
    std::string const tag = ".rank" + std::to_string(rank);
    if (dot == std::string::npos || dot <= base) {  // no extension (or a dot-file like ".trace")
      out += tag;
    } else {
      out.insert(dot, tag);
    }
  }
  return out;
}

inline int launcher_rank_or_none() noexcept {
  auto const r = launcher_rank();
  return r ? r->rank : -1;
}

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
