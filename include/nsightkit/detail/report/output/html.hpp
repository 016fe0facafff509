// Internal: the report's HTML page — one self-contained file (inline CSS and script, no network,
// no library) with an icicle view of the path tree, the sortable and filterable table, steps over
// the run, top kernels per module and the run's facts. docs/report-html.md describes it.
//
// The one builder of the page: the report writes it for its own snapshot, `nsightkit html` for
// saved reports (one run, several ranks side by side, or two runs compared). The page is the
// template in html_page.inc filled with the runs' data as JSON; its script draws every chart
// itself, so a page is whole wherever it is written (a bare GPU node included).
//
// Pure C++ (available in disabled builds: a page can be made from any snapshot).
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/fmt_format.hpp>
#include <nsightkit/detail/json.hpp>
#include <nsightkit/detail/report/output/text_sink.hpp>
#include <nsightkit/detail/text.hpp>
#include <nsightkit/report_types.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// The page's template (see html_page.inc).
inline constexpr char html_template[] =
#include <nsightkit/detail/report/output/html_page.inc>
    ;

/// A JSON string that is safe inside an HTML script element ("<" escaped).
inline void html_json_string(std::string& out, std::string_view s) {
  std::size_t const at = out.size();
  json_string(out, s);
  for (std::size_t i = at; i < out.size(); ++i) {
    if (out[i] == '<') out.replace(i, 1, "\\u003c");
  }
}

/// Text for an HTML element or attribute.
inline std::string html_text(std::string_view s) {
  std::string out;
  for (char c : valid_utf8(s)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

/// The columns of a page's rows, in order (the page's script uses the names).
inline constexpr char const html_columns[] =
    "[\"count\",\"total_ns\",\"self_ns\",\"mean_ns\",\"p50_ns\",\"p95_ns\",\"max_ns\",\"exact\","
    "\"busy_ns\",\"self_busy_ns\",\"idle_ns\",\"kernels\",\"kernel_ns\",\"launch_p50_ns\","
    "\"copy_bytes\",\"peak_bytes\"]";

/// One run on a page: a snapshot and the name the page gives it.
struct HtmlRun {
  ReportSnapshot const* snapshot;
  std::string label;
};

/// What a page shows: one run, several ranks side by side (and summed), or two runs compared
/// (the first is "before", the second "after").
enum class HtmlMode { single, ranks, compare };

inline char const* to_string(HtmlMode m) noexcept {
  switch (m) {
    case HtmlMode::ranks: return "ranks";
    case HtmlMode::compare: return "compare";
    case HtmlMode::single: break;
  }
  return "single";
}

/// The facts of one run: label, process, steps, threads, devices, notes and advice.
inline void html_run(std::string& out, ReportSnapshot const& s, std::string const& label) {
  out += "{\"label\":";
  html_json_string(out, label);
  fmt::format_to(std::back_inserter(out), ",\"rank\":{},\"pid\":{},\"run_ns\":{},\"gpu_source\":",
                 s.rank ? std::to_string(*s.rank) : std::string{"null"}, s.pid, s.run_ns);
  html_json_string(out, s.gpu.source);
  TimeStats const& st = s.steps;
  fmt::format_to(std::back_inserter(out), ",\"steps\":[{},{},{:.1f},{},{},{},{}],\"series\":[",
                 st.count, st.total_ns, st.mean_ns, st.p50_ns, st.p95_ns, st.max_ns,
                 st.exact ? 1 : 0);
  for (std::size_t i = 0; i < s.step_series.size(); ++i) {
    StepPoint const& p = s.step_series[i];
    fmt::format_to(std::back_inserter(out), "{}[{},{},{},{}]", i == 0 ? "" : ",", p.start_ns,
                   p.steps, p.total_ns, p.max_ns);
  }
  out += "],\"threads\":[";
  std::uint64_t dropped = 0, overflow = 0, deep = 0;
  for (std::size_t i = 0; i < s.threads.size(); ++i) {
    ThreadStats const& t = s.threads[i];
    fmt::format_to(std::back_inserter(out), "{}[{},", i == 0 ? "" : ",", t.id);
    html_json_string(out, t.name);
    fmt::format_to(std::back_inserter(out), ",{},{}]", t.ranges, t.exited ? 1 : 0);
    dropped += t.trace_dropped;
    overflow += t.paths_over_limit;
    deep += t.depth_over_limit;
  }
  out += "],\"devices\":[";
  for (std::size_t i = 0; i < s.gpu.devices.size(); ++i) {
    GpuDeviceStats const& d = s.gpu.devices[i];
    fmt::format_to(std::back_inserter(out), "{}[{},{},{},{},{}]", i == 0 ? "" : ",", d.device,
                   d.kernels, d.copies, d.busy_ns, d.span_ns);
  }
  out += "],\"notes\":[";
  std::vector<std::string> notes;
  if (!s.gpu.note.empty()) notes.push_back("GPU: " + s.gpu.note);
  if (!s.gpu.error.empty()) notes.push_back("GPU: " + s.gpu.error);
  if (overflow != 0)
    notes.push_back(
        fmt::format("{} ranges beyond the per-thread path limit are counted under "
                    "\"(other paths)\" (paths=N raises it)",
                    overflow));
  if (deep != 0)
    notes.push_back(
        fmt::format("{} ranges nested deeper than the depth limit are counted under "
                    "\"(deeper ranges)\" (depth=N raises it)",
                    deep));
  if (dropped != 0)
    notes.push_back(fmt::format(
        "{} trace events beyond the per-thread limit were not kept (trace-events=N raises it)",
        dropped));
  for (std::size_t i = 0; i < notes.size(); ++i) {
    if (i != 0) out += ',';
    html_json_string(out, notes[i]);
  }
  // The advice (docs/advice.md): [rule, severity, cost_ns, evidence, suggestion, [paths]].
  out += "],\"advice\":[";
  for (std::size_t i = 0; i < s.advice.size(); ++i) {
    Advice const& a = s.advice[i];
    out += i == 0 ? "[" : ",[";
    html_json_string(out, a.rule);
    out += ',';
    html_json_string(out, a.severity);
    fmt::format_to(std::back_inserter(out), ",{},", a.cost_ns);
    html_json_string(out, a.evidence);
    out += ',';
    html_json_string(out, a.suggestion);
    out += ",[";
    for (std::size_t k = 0; k < a.paths.size(); ++k) {
      if (k != 0) out += ',';
      html_json_string(out, a.paths[k]);
    }
    out += "]]";
  }
  out += "],\"advice_missing\":[";
  for (std::size_t i = 0; i < s.advice_missing.size(); ++i) {
    if (i != 0) out += ',';
    html_json_string(out, s.advice_missing[i]);
  }
  out += "]}";
}

/// The page's data (format "nsightkit-page", version 1): each run's facts, the union of the
/// runs' paths in tree order (a parent before its children, in the order first seen; paths are
/// matched by their components), and per run a row of numbers per path (null where it lacks the
/// path) and its paths' top kernels.
inline void html_data(TextSink& sink, std::vector<HtmlRun> const& runs, HtmlMode mode,
                      std::string const& title) {
  std::string& out = sink.buffer();
  out += "{\"format\":\"nsightkit-page\",\"version\":1,\"producer\":";
  html_json_string(out, std::string{"nsightkit "} + version_string);
  out += ",\"title\":";
  html_json_string(out, title);
  fmt::format_to(std::back_inserter(out), ",\"mode\":\"{}\",\"runs\":[", to_string(mode));
  for (std::size_t k = 0; k < runs.size(); ++k) {
    if (k != 0) out += ',';
    html_run(out, *runs[k].snapshot, runs[k].label);
  }
  // The union of the paths, and where each run's rows are in it.
  std::unordered_map<std::string, std::size_t> index;
  std::vector<PathStats const*> first;  // the row that named each path
  std::vector<long long> parent;
  std::vector<std::vector<std::size_t>> at(runs.size());  // per run: union index of each row
  for (std::size_t k = 0; k < runs.size(); ++k) {
    std::vector<std::string> keys;
    for (PathStats const& r : runs[k].snapshot->paths) {
      keys.resize(std::min(r.depth, keys.size()));
      std::string key = keys.empty() ? std::string{} : keys.back();
      key += std::to_string(r.domain.size()) + ':' + r.domain + std::to_string(r.name.size()) +
             ':' + r.name;
      auto const [it, fresh] = index.emplace(key, first.size());
      if (fresh) {
        first.push_back(&r);
        parent.push_back(keys.empty() ? -1LL : static_cast<long long>(index.at(keys.back())));
      }
      at[k].push_back(it->second);
      keys.push_back(std::move(key));
    }
  }
  out += "],\"cols\":";
  out += html_columns;
  out += ",\n\"paths\":{\"name\":[";
  for (std::size_t i = 0; i < first.size(); ++i) {
    if (i != 0) out += ',';
    html_json_string(out, first[i]->name);
    sink.maybe_flush();
  }
  out += "],\"parent\":[";
  for (std::size_t i = 0; i < parent.size(); ++i)
    fmt::format_to(std::back_inserter(out), "{}{}", i == 0 ? "" : ",", parent[i]);
  out += "]},\n\"values\":[";
  std::vector<std::string> kernels;
  std::unordered_map<std::string, std::size_t> kernel_index;
  std::string top;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    std::vector<PathStats const*> rows(first.size(), nullptr);
    for (std::size_t j = 0; j < at[k].size(); ++j) rows[at[k][j]] = &runs[k].snapshot->paths[j];
    out += k == 0 ? "[" : ",[";
    top += k == 0 ? "{" : ",{";
    bool first_top = true;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      out += i == 0 ? "\n" : ",\n";
      if (rows[i] == nullptr) {
        out += "null";
        continue;
      }
      PathStats const& r = *rows[i];
      GpuWorkStats const& w = r.work;
      std::uint64_t const copy_bytes =
          w.h2d.bytes + w.d2h.bytes + w.d2d.bytes + w.other_copies.bytes + w.memsets.bytes;
      fmt::format_to(std::back_inserter(out),
                     "[{},{},{},{:.1f},{},{},{},{},{},{},{},{},{},{},{},{}]", r.cpu.count,
                     r.cpu.total_ns, r.self_ns, r.cpu.mean_ns, r.cpu.p50_ns, r.cpu.p95_ns,
                     r.cpu.max_ns, r.cpu.exact ? 1 : 0, w.busy_ns, w.self_busy_ns, w.idle_ns,
                     w.kernels, w.kernel_ns, w.launch_latency.p50_ns, copy_bytes, w.peak_bytes);
      if (!w.top_kernels.empty()) {
        fmt::format_to(std::back_inserter(top), "{}\"{}\":[", first_top ? "" : ",", i);
        first_top = false;
        for (std::size_t q = 0; q < w.top_kernels.size(); ++q) {
          KernelStats const& ks = w.top_kernels[q];
          auto [it, fresh] = kernel_index.emplace(ks.name, kernels.size());
          if (fresh) kernels.push_back(ks.name);
          fmt::format_to(std::back_inserter(top), "{}[{},{},{}]", q == 0 ? "" : ",", it->second,
                         ks.count, ks.total_ns);
        }
        top += ']';
      }
      sink.maybe_flush();
    }
    out += ']';
    top += '}';
  }
  out += "],\n\"kernels\":[";
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    if (i != 0) out += ',';
    html_json_string(out, kernels[i]);
  }
  out += "],\n\"top\":[";
  out += top;
  out += "]}";
}

/// The page's title for a snapshot.
inline std::string html_title(ReportSnapshot const& s) {
  return s.rank ? fmt::format("nsightkit report (rank {}, pid {})", *s.rank, s.pid)
                : fmt::format("nsightkit report (pid {})", s.pid);
}

/// The name a page gives a snapshot's run.
inline std::string html_label(ReportSnapshot const& s) {
  return s.rank ? fmt::format("rank {}", *s.rank) : fmt::format("pid {}", s.pid);
}

/// Writes a page into `sink`: the template with `title` and the data `data(sink)` appends
/// (html_data()'s JSON).
template <class Data>
inline void write_page(TextSink& sink, std::string const& title, Data&& data) {
  std::string_view const page{html_template, sizeof html_template - 1};
  std::string& out = sink.buffer();
  std::size_t pos = 0;
  for (;;) {
    std::size_t const at = page.find("@@NSK_", pos);
    if (at == std::string_view::npos) break;
    std::size_t const end = page.find("@@", at + 6);
    if (end == std::string_view::npos) break;
    out.append(page.data() + pos, at - pos);
    std::string_view const marker = page.substr(at, end + 2 - at);
    if (marker == "@@NSK_TITLE@@") {
      out += html_text(title);
    } else if (marker == "@@NSK_DATA@@") {
      data(sink);
    }
    pos = end + 2;
    sink.maybe_flush();
  }
  out.append(page.data() + pos, page.size() - pos);
  sink.flush();
}

/// Writes the page of `runs` into `sink` (see html_data()).
inline void write_html(TextSink& sink, std::vector<HtmlRun> const& runs, HtmlMode mode,
                       std::string const& title) {
  write_page(sink, title, [&](TextSink& into) { html_data(into, runs, mode, title); });
}

/// Writes the page of the snapshot `s` into `sink`.
inline void write_html(TextSink& sink, ReportSnapshot const& s) {
  write_html(sink, {HtmlRun{&s, html_label(s)}}, HtmlMode::single, html_title(s));
}

/// The page for `s` as one string.
inline std::string html_page(ReportSnapshot const& s) {
  TextSink sink;
  write_html(sink, s);
  return std::move(sink.buffer());
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
