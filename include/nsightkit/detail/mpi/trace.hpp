// Internal: one Chrome trace of every rank: a process per rank (pid = rank, ordered by
// process_sort_index), every rank's events shifted onto one time line, start/end ids renumbered
// so that two ranks' ids never pair. The MPI component (gather.hpp) and `nsightkit merge` both
// make it here.
//
// Each rank's events come one per line: under MPI the trace the report writes
// (detail::report::trace_json; names are escaped, so no line break falls inside an event),
// offline each event of a trace file written out again on one line. rank_fragment() rewrites
// three fields of each event — pid, ts and a start/end id — and the parts are only concatenated.
// The scan below reads such compact JSON objects, not arbitrary text: a top-level key of an event
// is a string at brace depth 1 followed by ':'.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/fmt_format.hpp>
#include <nsightkit/detail/json.hpp>
#include <nsightkit/detail/report/output/text_sink.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::mpi {

/// The event lines of a trace the report wrote (between "traceEvents":[ and ]), or empty.
inline std::string_view trace_events(std::string_view trace) noexcept {
  constexpr std::string_view head = "\"traceEvents\":[\n";
  constexpr std::string_view tail = "\n],\"otherData\":";
  std::size_t const begin = trace.find(head);
  std::size_t const end = trace.rfind(tail);
  if (begin == std::string_view::npos || end == std::string_view::npos || end < begin + head.size())
    return {};
  return trace.substr(begin + head.size(), end - begin - head.size());
}

/// Where the values of an event's top-level "ph", "pid", "ts" and "id" are (empty: absent).
struct EventFields {
  std::string_view ph;
  std::string_view pid;
  std::string_view ts;
  std::string_view id;
};

/// Scans one event object; false when the line is not one.
inline bool scan_event(std::string_view e, EventFields& f) noexcept {
  f = EventFields{};
  if (e.empty() || e.front() != '{') return false;
  int depth = 0;
  std::size_t i = 0;
  while (i < e.size()) {
    char const c = e[i];
    if (c == '"') {
      std::size_t j = i + 1;
      while (j < e.size() && e[j] != '"') j += e[j] == '\\' ? 2u : 1u;
      if (j >= e.size()) return false;
      std::string_view const str = e.substr(i + 1, j - i - 1);
      i = j + 1;
      if (depth != 1 || i >= e.size() || e[i] != ':') continue;
      // A key at the top level: its value runs to the next ',' or '}' at this depth.
      std::size_t const v = i + 1;
      std::size_t k = v;
      int d = 0;
      while (k < e.size()) {
        char const ch = e[k];
        if (ch == '"') {
          ++k;
          while (k < e.size() && e[k] != '"') k += e[k] == '\\' ? 2u : 1u;
        } else if (ch == '{' || ch == '[') {
          ++d;
        } else if (ch == '}' || ch == ']') {
          if (d == 0) break;
          --d;
        } else if (ch == ',' && d == 0) {
          break;
        }
        ++k;
      }
      std::string_view const value = e.substr(v, k - v);
      if (str == "ph") f.ph = value;
      if (str == "pid") f.pid = value;
      if (str == "ts") f.ts = value;
      if (str == "id") f.id = value;
      i = k;
      continue;
    }
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') --depth;
    ++i;
  }
  return depth == 0;
}

/// A "ts" in microseconds ("12.345", "-0.250", "0", "5.0", "1e-05") in nanoseconds, rounded to
/// the nearest; false for anything that is not a JSON number.
inline bool parse_micros(std::string_view s, std::int64_t& ns) noexcept {
  bool const negative = !s.empty() && s.front() == '-';
  std::string_view digits = negative ? s.substr(1) : s;
  std::int64_t whole = 0, frac = 0;
  std::size_t i = 0, n_whole = 0;
  for (; i < digits.size() && digits[i] >= '0' && digits[i] <= '9'; ++i, ++n_whole)
    whole = whole * 10 + (digits[i] - '0');
  bool simple = n_whole != 0 && n_whole <= 15;
  if (simple && i < digits.size()) {
    // The report's own form: at most three decimals, read exactly.
    std::size_t const decimals = digits.size() - i - 1;
    simple = digits[i] == '.' && decimals != 0 && decimals <= 3;
    std::size_t n = 0;
    for (++i; simple && i < digits.size(); ++i, ++n) {
      simple = digits[i] >= '0' && digits[i] <= '9';
      frac = frac * 10 + (digits[i] - '0');
    }
    for (; n < 3; ++n) frac *= 10;
  }
  if (simple) {
    ns = (whole * 1000 + frac) * (negative ? -1 : 1);
    return true;
  }
  // Any other JSON number (more decimals, an exponent): through a double.
  if (s.empty() || s.size() > 64 ||
      s.find_first_not_of("0123456789+-.eE") != std::string_view::npos)
    return false;
  char buf[72];
  std::memcpy(buf, s.data(), s.size());
  buf[s.size()] = '\0';
  char* end = nullptr;
  double const us = std::strtod(buf, &end);
  if (end != buf + s.size() || !std::isfinite(us) || std::abs(us) > 9.2e15) return false;
  ns = std::llround(us * 1000.0);
  return true;
}

/// Whether an event's "ph" is a start/end phase whose id the merge renumbers.
inline bool async_phase(std::string_view ph) noexcept {
  return ph == "\"b\"" || ph == "\"e\"" || ph == "\"n\"";
}

/// Calls `each(line)` for every event line of `events`.
template <class F>
inline void for_each_event(std::string_view events, F&& each) {
  while (!events.empty()) {
    std::size_t const nl = events.find('\n');
    std::string_view line = events.substr(0, nl);
    events = nl == std::string_view::npos ? std::string_view{} : events.substr(nl + 1);
    if (!line.empty() && line.back() == ',') line.remove_suffix(1);
    if (!line.empty()) each(line);
  }
}

/// The distinct start/end ids of `events`.
inline std::uint64_t count_async_ids(std::string_view events) {
  std::unordered_map<std::string_view, std::uint64_t> seen;
  for_each_event(events, [&](std::string_view line) {
    EventFields f;
    if (scan_event(line, f) && async_phase(f.ph) && !f.id.empty()) seen.emplace(f.id, seen.size());
  });
  return seen.size();
}

/// This rank's part of the merged trace: a process_name event when `process_name` is not empty,
/// its process_sort_index, then its events with pid = `rank`, ts + `shift_ns` (not metadata) and
/// start/end ids renumbered from `id_base` + 1 in the order first seen. Events are joined by ",\n"
/// (the parts are joined the same way, merged_trace()).
inline std::string rank_fragment(std::string_view events, int rank, std::int64_t shift_ns,
                                 std::uint64_t id_base, std::string_view process_name = {}) {
  std::string out;
  if (!process_name.empty()) {
    fmt::format_to(std::back_inserter(out),
                   "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"tid\":0,\"ts\":0,"
                   "\"args\":{{\"name\":",
                   rank);
    json_string(out, process_name);
    out += "}},\n";
  }
  fmt::format_to(std::back_inserter(out),
                 "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{},\"tid\":0,\"ts\":0,"
                 "\"args\":{{\"sort_index\":{}}}}}",
                 rank, rank);
  out.reserve(events.size() + out.size() + events.size() / 16);
  std::unordered_map<std::string_view, std::uint64_t> ids;
  for_each_event(events, [&](std::string_view line) {
    out += ",\n";
    EventFields f;
    if (!scan_event(line, f)) {
      out += line;
      return;
    }
    // The fields appear in the line in the order the writer put them; replace them in order.
    struct Edit {
      std::string_view at;
      std::string with;
    };
    std::vector<Edit> edits;
    if (!f.pid.empty()) edits.push_back({f.pid, std::to_string(rank)});
    std::int64_t ts = 0;
    if (shift_ns != 0 && f.ph != "\"M\"" && !f.ts.empty() && parse_micros(f.ts, ts)) {
      std::string t;
      json_micros(t, ts + shift_ns);
      edits.push_back({f.ts, std::move(t)});
    }
    if (async_phase(f.ph) && !f.id.empty()) {
      auto const it = ids.emplace(f.id, ids.size() + 1).first;
      edits.push_back({f.id, std::to_string(id_base + it->second)});
    }
    std::sort(edits.begin(), edits.end(),
              [](Edit const& a, Edit const& b) { return a.at.data() < b.at.data(); });
    char const* pos = line.data();
    for (Edit const& e : edits) {
      out.append(pos, static_cast<std::size_t>(e.at.data() - pos));
      out += e.with;
      pos = e.at.data() + e.at.size();
    }
    out.append(pos, static_cast<std::size_t>(line.data() + line.size() - pos));
  });
  return out;
}

/// The merged trace: every rank's fragment (rank_fragment()) joined, and `other_data` (a JSON
/// object saying where each rank's events came from) as its otherData.
inline void merged_trace(report::TextSink& sink, std::vector<std::string> const& fragments,
                         std::string const& other_data) {
  sink.buffer() += "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  for (std::size_t i = 0; i < fragments.size(); ++i) {
    if (i != 0) sink.buffer() += ",\n";
    sink.buffer() += fragments[i];
    sink.maybe_flush();
  }
  sink.buffer() += "\n],\"otherData\":";
  sink.buffer() += other_data;
  sink.buffer() += "}\n";
  sink.flush();
}

}  // namespace detail::mpi
NSIGHTKIT_DETAIL_END_NAMESPACE
