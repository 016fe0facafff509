// `nsightkit diff A B`: two saved reports path by path, B against A, with regressions flagged only
// where a change is larger than both the threshold and the path's own spread.
#include "arguments.hpp"
#include "command.hpp"
#include "output.hpp"
#include "report_file.hpp"

#include <nsightkit/detail/fmt_format.hpp>
#include <nsightkit/detail/format.hpp>
#include <nsightkit/detail/mpi/merge_text.hpp>
#include <nsightkit/detail/report/output/gpu_columns.hpp>
#include <nsightkit/detail/text.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace nsightkit_command {
namespace {

namespace nsk = nsightkit;
using Json = nlohmann::ordered_json;

constexpr char help[] =
    R"(usage: nsightkit diff A.json B.json [options]

Compares two saved reports (summary JSON files) path by path, B against A: calls, total, mean
and p50 time per call, GPU time where the reports have it. Paths are matched by their full path;
a path in one report only is shown as added or removed.

The rule: the change of a path is that of its time per call (total / calls, so that runs of
different lengths compare), (B - A) / A. Its spread is how much its calls vary within a run,
(p95 - p50) / p50, the larger of the two runs' (0 for a path called once). A change is flagged
(regression when slower, improvement when faster) only when it exceeds both --threshold and the
spread: a change smaller than the path's own step-to-step variation is not told apart from noise.
GPU time per call is judged the same way (its spread from CUDA-event times; CUPTI's busy time
has no per-call distribution, so there the threshold alone decides). The capture-window steps
are compared the same way, below the paths.

options:
  --threshold PCT       the smallest change flagged, in percent (default 5)
  --json PATH           also write the comparison as JSON ("nsightkit-diff", version 1) to PATH
                        ("-": standard output, then without the table)
  --changed             only paths flagged, added or removed (with their ancestors)
  --fail-on-regression  exit with status 1 when a regression is flagged
  -h, --help            this text

Exit status: 0 whether or not a regression is flagged (1 with --fail-on-regression and a
regression); 2 for a bad option or a file that is no readable summary.
)";

/// One side of a path: the numbers the comparison uses.
struct Side {
  std::uint64_t calls{0};
  std::int64_t total_ns{0};
  double mean_ns{0};
  std::int64_t p50_ns{0};
  std::int64_t p95_ns{0};
  bool has_gpu{false};
  std::int64_t gpu_ns{0};  ///< GPU total: CUPTI busy time, else CUDA-event time
  double gpu_per_call_ns{0};
  std::optional<double> gpu_spread;  ///< only with CUDA-event times
};

/// (p95 - p50) / p50: how much the calls of a path vary within one run.
double spread_of(std::int64_t p50, std::int64_t p95) {
  return p50 > 0 && p95 > p50 ? static_cast<double>(p95 - p50) / static_cast<double>(p50) : 0.0;
}

Side side_of(nsk::PathStats const& r) {
  Side s;
  s.calls = r.cpu.count;
  s.total_ns = r.cpu.total_ns;
  s.mean_ns = r.cpu.mean_ns;
  s.p50_ns = r.cpu.p50_ns;
  s.p95_ns = r.cpu.p95_ns;
  if (nsk::detail::report::has_work(r)) {
    s.has_gpu = true;
    s.gpu_ns = r.work.busy_ns;
    s.gpu_per_call_ns =
        r.work.calls_with_work != 0
            ? static_cast<double>(r.work.busy_ns) / static_cast<double>(r.work.calls_with_work)
            : 0.0;
  } else if (r.gpu.count != 0) {
    s.has_gpu = true;
    s.gpu_ns = r.gpu.total_ns;
    s.gpu_per_call_ns = r.gpu.mean_ns;
    s.gpu_spread = spread_of(r.gpu.p50_ns, r.gpu.p95_ns);
  }
  return s;
}

Side side_of(nsk::TimeStats const& t) {
  Side s;
  s.calls = t.count;
  s.total_ns = t.total_ns;
  s.mean_ns = t.mean_ns;
  s.p50_ns = t.p50_ns;
  s.p95_ns = t.p95_ns;
  return s;
}

/// A change judged by the rule: its size, the spread it is held against, the verdict.
struct Judged {
  std::optional<double> change;  ///< (B - A) / A; none when A took no time
  double spread{0};
  bool slower{false};
  bool faster{false};
};

Judged judge(double a, double b, double spread, double threshold) {
  Judged j;
  j.spread = spread;
  if (!(a > 0)) return j;
  j.change = (b - a) / a;
  double const bar = std::max(threshold, spread);
  j.slower = *j.change > bar;
  j.faster = -*j.change > bar;
  return j;
}

/// One row of the comparison.
struct Row {
  std::string path;
  std::string label;
  std::size_t depth{0};
  std::optional<Side> a, b;
  Judged cpu, gpu;
  [[nodiscard]] bool regression() const { return cpu.slower || gpu.slower; }
  [[nodiscard]] bool improvement() const { return !regression() && (cpu.faster || gpu.faster); }
  [[nodiscard]] char const* status() const {
    if (!a) return "added";
    if (!b) return "removed";
    return regression() ? "regression" : improvement() ? "improvement" : "unchanged";
  }
  [[nodiscard]] bool notable() const { return !a || !b || regression() || improvement(); }
};

void judge_row(Row& r, double threshold) {
  if (!r.a || !r.b) return;
  r.cpu = judge(r.a->mean_ns, r.b->mean_ns,
                std::max(spread_of(r.a->p50_ns, r.a->p95_ns), spread_of(r.b->p50_ns, r.b->p95_ns)),
                threshold);
  if (r.a->has_gpu && r.b->has_gpu) {
    r.gpu =
        judge(r.a->gpu_per_call_ns, r.b->gpu_per_call_ns,
              std::max(r.a->gpu_spread.value_or(0.0), r.b->gpu_spread.value_or(0.0)), threshold);
  }
}

/// The union of both reports' paths in tree order: a parent before its children, children in
/// the order first seen (A's order, then paths only B has).
std::vector<Row> union_rows(nsk::ReportSnapshot const& a, nsk::ReportSnapshot const& b) {
  std::map<std::string, std::size_t> index;
  std::vector<Row> rows;
  std::vector<std::size_t> parent;
  auto add = [&](nsk::ReportSnapshot const& s, bool is_a) {
    std::vector<std::string> keys;
    for (nsk::PathStats const& p : s.paths) {
      keys.resize(p.depth);
      std::string key = keys.empty() ? std::string{} : keys.back();
      key += std::to_string(p.domain.size()) + ':' + p.domain + std::to_string(p.name.size()) +
             ':' + p.name;
      auto [it, fresh] = index.emplace(key, rows.size());
      if (fresh) {
        Row r;
        r.path = p.path;
        r.label = p.name;
        r.depth = p.depth;
        rows.push_back(std::move(r));
        parent.push_back(keys.empty() ? static_cast<std::size_t>(-1) : index.at(keys.back()));
      }
      (is_a ? rows[it->second].a : rows[it->second].b) = side_of(p);
      keys.push_back(std::move(key));
    }
  };
  add(a, true);
  add(b, false);
  std::vector<std::vector<std::size_t>> children(rows.size());
  std::vector<std::size_t> roots;
  for (std::size_t i = 0; i < rows.size(); ++i)
    (parent[i] < rows.size() ? children[parent[i]] : roots).push_back(i);
  std::vector<Row> out;
  std::vector<std::size_t> todo(roots.rbegin(), roots.rend());
  while (!todo.empty()) {
    std::size_t const i = todo.back();
    todo.pop_back();
    out.push_back(rows[i]);
    todo.insert(todo.end(), children[i].rbegin(), children[i].rend());
  }
  return out;
}

std::string dur(std::optional<double> ns) {
  return ns ? nsk::detail::format_duration(std::llround(*ns)) : "-";
}

std::string pct(std::optional<double> x) { return x ? fmt::format("{:+.1f}%", *x * 100) : "-"; }

std::string verdict(Row const& r) {
  if (!r.a) return "added";
  if (!r.b) return "removed";
  std::string v;
  auto add = [&](char const* s) { v += (v.empty() ? "" : ", ") + std::string{s}; };
  if (r.cpu.slower) add("regression");
  if (r.cpu.faster) add("improvement");
  if (r.gpu.slower) add("GPU regression");
  if (r.gpu.faster) add("GPU improvement");
  return v;
}

std::string describe(SavedSummary const& s) {
  nsk::ReportSnapshot const& snap = s.snapshot;
  return fmt::format("{} ({}pid {}, {} of run time)", nsk::detail::printable(s.file),
                     snap.rank ? fmt::format("rank {}, ", *snap.rank) : std::string{}, snap.pid,
                     nsk::detail::format_duration(snap.run_ns));
}

Json side_json(std::optional<Side> const& s) {
  if (!s) return nullptr;
  Json j = {{"calls", s->calls},
            {"total_ns", s->total_ns},
            {"mean_ns", s->mean_ns},
            {"p50_ns", s->p50_ns},
            {"p95_ns", s->p95_ns}};
  j["gpu_ns"] = s->has_gpu ? Json(s->gpu_ns) : Json(nullptr);
  j["gpu_per_call_ns"] = s->has_gpu ? Json(s->gpu_per_call_ns) : Json(nullptr);
  return j;
}

Json judged_json(Judged const& j) {
  return {{"change", j.change ? Json(*j.change) : Json(nullptr)},
          {"spread", j.spread},
          {"slower", j.slower},
          {"faster", j.faster}};
}

Json row_json(Row const& r) {
  Json j = {{"path", r.path}, {"depth", r.depth}, {"status", r.status()}};
  j["a"] = side_json(r.a);
  j["b"] = side_json(r.b);
  j["cpu"] = judged_json(r.cpu);
  j["gpu"] = r.a && r.b && r.a->has_gpu && r.b->has_gpu ? judged_json(r.gpu) : Json(nullptr);
  return j;
}

int diff(Arguments const& a) {
  if (a.positionals().size() != 2)
    throw UsageError("give two report files (A.json B.json), not " +
                     std::to_string(a.positionals().size()));
  double const threshold_pct = a.number("--threshold", 5.0);
  double const threshold = threshold_pct / 100.0;
  SavedSummary const ra = read_summary(a.positionals()[0]);
  SavedSummary const rb = read_summary(a.positionals()[1]);

  std::vector<Row> rows = union_rows(ra.snapshot, rb.snapshot);
  for (Row& r : rows) judge_row(r, threshold);
  std::optional<Row> steps;
  if (ra.snapshot.steps.count != 0 || rb.snapshot.steps.count != 0) {
    steps.emplace();
    steps->path = steps->label = "capture-window steps";
    if (ra.snapshot.steps.count != 0) steps->a = side_of(ra.snapshot.steps);
    if (rb.snapshot.steps.count != 0) steps->b = side_of(rb.snapshot.steps);
    judge_row(*steps, threshold);
  }
  std::size_t regressions = 0, improvements = 0, added = 0, removed = 0;
  for (Row const& r : rows) {
    if (!r.a) ++added;
    if (!r.b) ++removed;
    if (r.regression()) ++regressions;
    if (r.improvement()) ++improvements;
  }
  bool const steps_slower = steps && steps->regression();
  if (steps_slower) ++regressions;
  if (steps && steps->improvement()) ++improvements;

  std::string const json_path = a.value("--json");
  if (!json_path.empty()) {
    Json doc = {{"format", "nsightkit-diff"}, {"version", 1}};
    auto run = [](SavedSummary const& s) {
      return Json{{"file", s.file},
                  {"nsightkit_version", s.nsightkit_version},
                  {"rank", s.snapshot.rank ? Json(*s.snapshot.rank) : Json(nullptr)},
                  {"pid", s.snapshot.pid},
                  {"run_ns", s.snapshot.run_ns}};
    };
    doc["a"] = run(ra);
    doc["b"] = run(rb);
    doc["threshold_pct"] = threshold_pct;
    Json paths = Json::array();
    for (Row const& r : rows) paths.push_back(row_json(r));
    doc["paths"] = std::move(paths);
    doc["steps"] = steps ? row_json(*steps) : Json(nullptr);
    doc["regressions"] = regressions;
    doc["improvements"] = improvements;
    doc["added"] = added;
    doc["removed"] = removed;
    write_file(json_path, doc.dump(1, ' ', false, Json::error_handler_t::replace) + "\n");
  }

  if (json_path != "-") {
    bool const gpu = std::any_of(rows.begin(), rows.end(), [](Row const& r) {
      return (r.a && r.a->has_gpu) || (r.b && r.b->has_gpu);
    });
    std::vector<std::string> lines{
        "nsightkit diff: B against A",
        "  A: " + describe(ra),
        "  B: " + describe(rb),
        fmt::format("change: of the time per call (total / calls); spread: (p95 - p50) / p50 of "
                    "the path's calls, the larger of"),
        fmt::format("the two runs'. A change is flagged when it exceeds both --threshold ({:g}%) "
                    "and the spread.",
                    threshold_pct),
        ""};
    std::vector<std::string> header{"path",   "calls A", "calls B", "total A", "total B", "mean A",
                                    "mean B", "change",  "spread",  "p50 A",   "p50 B"};
    if (gpu) {
      for (char const* h : {"GPU/call A", "GPU/call B", "GPU change"}) header.emplace_back(h);
    }
    header.emplace_back("verdict");
    std::vector<bool> keep(rows.size(), !a.has("--changed"));
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (!rows[i].notable() || keep[i]) continue;
      keep[i] = true;
      // The ancestors: the rows before it of smaller depth, nearest first.
      std::size_t depth = rows[i].depth;
      for (std::size_t k = i; k-- > 0 && depth > 0;) {
        if (rows[k].depth < depth) {
          keep[k] = true;
          depth = rows[k].depth;
        }
      }
    }
    auto cells = [&](Row const& r, bool tree) {
      auto num = [](std::optional<Side> const& s, auto get) -> std::optional<double> {
        if (!s) return std::nullopt;
        return get(*s);
      };
      std::vector<std::string> c{
          nsk::detail::printable(tree ? std::string(2 * r.depth, ' ') + r.label : r.path),
          r.a ? std::to_string(r.a->calls) : "-",
          r.b ? std::to_string(r.b->calls) : "-",
          dur(num(r.a, [](Side const& s) { return static_cast<double>(s.total_ns); })),
          dur(num(r.b, [](Side const& s) { return static_cast<double>(s.total_ns); })),
          dur(num(r.a, [](Side const& s) { return s.mean_ns; })),
          dur(num(r.b, [](Side const& s) { return s.mean_ns; })),
          pct(r.cpu.change),
          r.a && r.b ? fmt::format("{:.1f}%", r.cpu.spread * 100) : "-",
          dur(num(r.a, [](Side const& s) { return static_cast<double>(s.p50_ns); })),
          dur(num(r.b, [](Side const& s) { return static_cast<double>(s.p50_ns); }))};
      if (gpu) {
        auto per_call = [](Side const& s) -> std::optional<double> {
          return s.has_gpu ? std::optional<double>{s.gpu_per_call_ns} : std::nullopt;
        };
        c.push_back(dur(r.a ? per_call(*r.a) : std::nullopt));
        c.push_back(dur(r.b ? per_call(*r.b) : std::nullopt));
        c.push_back(pct(r.gpu.change));
      }
      c.push_back(verdict(r));
      return c;
    };
    std::vector<std::vector<std::string>> table;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (keep[i]) table.push_back(cells(rows[i], true));
    }
    nsk::detail::mpi::render_table(lines, header, table);
    if (steps && (!a.has("--changed") || steps->notable())) {
      lines.emplace_back("");
      std::vector<std::vector<std::string>> st{cells(*steps, false)};
      nsk::detail::mpi::render_table(lines, header, st);
    }
    lines.emplace_back("");
    Row const* worst = nullptr;
    std::size_t unchanged = 0;
    for (Row const& r : rows) {
      if (r.cpu.slower && (worst == nullptr || *r.cpu.change > *worst->cpu.change)) worst = &r;
      if (std::string{r.status()} == "unchanged") ++unchanged;
    }
    lines.push_back(fmt::format(
        "{} regression{}{}, {} improvement{}, {} path{} added, {} removed, {} unchanged (within "
        "--threshold or the spread)",
        regressions, regressions == 1 ? "" : "s",
        worst != nullptr ? fmt::format(" (largest: {} {})", nsk::detail::printable(worst->path),
                                       pct(worst->cpu.change))
                         : std::string{},
        improvements, improvements == 1 ? "" : "s", added, added == 1 ? "" : "s", removed,
        unchanged));
    std::string text;
    for (std::string const& l : lines) text += l + "\n";
    write_file("-", text);
  }
  return a.has("--fail-on-regression") && regressions != 0 ? 1 : 0;
}

}  // namespace

int run_diff(Invocation const& call) {
  return run_subcommand("nsightkit diff", help, call.args,
                        {{"--threshold", nullptr, true, false},
                         {"--json", nullptr, true, false},
                         {"--changed", nullptr, false, false},
                         {"--fail-on-regression", nullptr, false, false}},
                        diff);
}

}  // namespace nsightkit_command
