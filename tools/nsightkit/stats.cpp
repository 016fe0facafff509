// `nsightkit stats`: a saved report's table — the one the program prints (detail/report/output/table.hpp)
// — with its rows sorted, filtered or cut to the largest.
#include "arguments.hpp"
#include "command.hpp"
#include "output.hpp"
#include "report_file.hpp"

#include <nsightkit/detail/mpi/glob.hpp>
#include <nsightkit/detail/report/output/gpu_columns.hpp>
#include <nsightkit/detail/report/output/summary.hpp>
#include <nsightkit/detail/report/output/table.hpp>
#include <nsightkit/detail/text.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace nsightkit_command {
namespace {

namespace nsk = nsightkit;

constexpr char help[] =
    R"(usage: nsightkit stats REPORT.json [options]

Prints the table of a saved report: the summary JSON that NSIGHTKIT_REPORT=json=PATH (or
Report::write_json) writes, gzip-compressed or not. Without options it is the table the program
printed, from the same code; the options change which rows are shown and in which order.

options:
  --sort KEY      siblings in order of KEY: total (default), self, calls, mean, p95, gpu (GPU busy
                  time from CUPTI, else the CUDA-event time), name (alphabetical); the tree stays
  --filter GLOB   only paths matching GLOB (shell wildcards: * ? [seq]; * also matches '/'), tried
                  on the full path ("forward/encoder/*") and on the path's own name ("conv*");
                  repeatable (a path matching any is shown). The ancestors of a shown path are
                  shown too, so that the tree still reads; the footer says how many
  --depth N       only paths at most N deep (1: the outermost ranges)
  --top N         only the N paths with the largest KEY (the first N names with --sort name),
                  with their ancestors
  --per-thread    also each thread's own rows (sorted and filtered the same way)
  --json PATH     also write the shown rows as a summary JSON ("nsightkit-report", version 1) to
                  PATH ("-": standard output, then without the table); without --filter, --depth
                  and --top it holds what the file held
  -h, --help      this text

Exit status: 0; 2 for a bad option or a file that is no readable summary (the message names it).
docs/profile.md ("Reading saved reports") says more.
)";

enum class Key { total, self, calls, mean, p95, gpu, name };

/// GPU time of a row: CUPTI's busy time where it has work, else the CUDA-event time.
double gpu_time(nsk::PathStats const& r) {
  return static_cast<double>(nsk::detail::report::has_work(r) ? r.work.busy_ns : r.gpu.total_ns);
}

double key_value(nsk::PathStats const& r, Key k) {
  switch (k) {
    case Key::total: return static_cast<double>(r.cpu.total_ns);
    case Key::self: return static_cast<double>(r.self_ns);
    case Key::calls: return static_cast<double>(r.cpu.count);
    case Key::mean: return r.cpu.mean_ns;
    case Key::p95: return static_cast<double>(r.cpu.p95_ns);
    case Key::gpu: return gpu_time(r);
    case Key::name: break;
  }
  return 0.0;
}

/// Whether `a` comes before `b`: larger values first, names alphabetically.
bool before(nsk::PathStats const& a, nsk::PathStats const& b, Key k) {
  if (k == Key::name) return a.name < b.name;
  return key_value(a, k) > key_value(b, k);
}

struct Selection {
  Key key{Key::total};
  std::vector<std::string> filters;
  std::size_t depth{0};  // 0: every depth
  std::size_t top{0};    // 0: every path
};

struct Shown {
  std::size_t rows{0};
  std::size_t ancestors{0};  // shown only because a path below them is
};

bool matches(nsk::PathStats const& r, std::vector<std::string> const& filters) {
  for (std::string const& g : filters) {
    if (nsk::detail::mpi::glob_match(r.path, g) || nsk::detail::mpi::glob_match(r.name, g))
      return true;
  }
  return false;
}

/// The rows of one tree (parents are indices into `rows`) that `sel` shows, in tree order with
/// siblings by its key; parents re-indexed.
std::vector<nsk::PathStats> select(std::vector<nsk::PathStats> const& rows, Selection const& sel,
                                   Shown& shown) {
  std::size_t const n = rows.size();
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  std::vector<std::size_t> picked;
  for (std::size_t i = 0; i < n; ++i) {
    if (sel.depth != 0 && rows[i].depth >= sel.depth) continue;
    if (!sel.filters.empty() && !matches(rows[i], sel.filters)) continue;
    picked.push_back(i);
  }
  if (sel.top != 0 && picked.size() > sel.top) {
    std::stable_sort(picked.begin(), picked.end(), [&](std::size_t a, std::size_t b) {
      return before(rows[a], rows[b], sel.key);
    });
    picked.resize(sel.top);
  }
  std::vector<char> show(n, 0);
  for (std::size_t i : picked) show[i] = 1;
  for (std::size_t i : picked) {
    for (std::size_t p = rows[i].parent; p < n && show[p] == 0; p = rows[p].parent) {
      show[p] = 2;
      ++shown.ancestors;
    }
  }
  std::vector<std::vector<std::size_t>> children(n);
  std::vector<std::size_t> roots;
  for (std::size_t i = 0; i < n; ++i) {
    if (show[i] == 0) continue;
    (rows[i].parent < n ? children[rows[i].parent] : roots).push_back(i);
  }
  auto order = [&](std::vector<std::size_t>& v) {
    std::stable_sort(v.begin(), v.end(), [&](std::size_t a, std::size_t b) {
      return before(rows[a], rows[b], sel.key);
    });
  };
  std::vector<nsk::PathStats> out;
  std::vector<std::pair<std::size_t, std::size_t>> todo;  // (row, its new parent)
  order(roots);
  for (std::size_t k = roots.size(); k-- > 0;) todo.emplace_back(roots[k], none);
  while (!todo.empty()) {
    auto const [i, parent] = todo.back();
    todo.pop_back();
    std::size_t const at = out.size();
    out.push_back(rows[i]);
    out.back().parent = parent;
    order(children[i]);
    for (std::size_t k = children[i].size(); k-- > 0;) todo.emplace_back(children[i][k], at);
  }
  shown.rows += out.size();
  return out;
}

/// `s` with its merged rows and each thread's rows selected.
nsk::ReportSnapshot selected(nsk::ReportSnapshot const& s, Selection const& sel, Shown& shown,
                             Shown& thread_shown) {
  nsk::ReportSnapshot out = s;
  out.paths = select(s.paths, sel, shown);
  out.thread_paths.clear();
  for (nsk::ThreadStats const& t : s.threads) {
    std::vector<nsk::PathStats> rows;
    std::size_t const first = out.thread_paths.size();
    std::vector<std::size_t> local(s.thread_paths.size(), static_cast<std::size_t>(-1));
    for (std::size_t i = 0; i < s.thread_paths.size(); ++i) {
      if (s.thread_paths[i].thread != t.id) continue;
      local[i] = rows.size();
      rows.push_back(s.thread_paths[i]);
      std::size_t const p = rows.back().parent;
      rows.back().parent = p < local.size() ? local[p] : static_cast<std::size_t>(-1);
    }
    for (nsk::PathStats& r : select(rows, sel, thread_shown)) {
      if (r.parent != static_cast<std::size_t>(-1)) r.parent += first;
      out.thread_paths.push_back(std::move(r));
    }
  }
  return out;
}

int stats(Arguments const& a) {
  if (a.positionals().size() != 1)
    throw UsageError("give one report file (REPORT.json), not " +
                     std::to_string(a.positionals().size()));
  static constexpr Key keys[] = {Key::total, Key::self, Key::calls, Key::mean,
                                 Key::p95,   Key::gpu,  Key::name};
  std::vector<std::string> const names{"total", "self", "calls", "mean", "p95", "gpu", "name"};
  std::string const sort = a.choice("--sort", names, "total");
  Selection sel;
  sel.key = keys[std::find(names.begin(), names.end(), sort) - names.begin()];
  sel.filters = a.values("--filter");
  for (std::string const& g : sel.filters) {
    if (g.empty()) throw UsageError("--filter needs a pattern, not an empty one");
  }
  sel.depth = static_cast<std::size_t>(a.count("--depth", 0, 1, UINT32_MAX));
  sel.top = static_cast<std::size_t>(a.count("--top", 0, 1, UINT32_MAX));
  bool const per_thread = a.has("--per-thread");

  SavedSummary const saved = read_summary(a.positionals()[0]);
  Shown shown, thread_shown;
  nsk::ReportSnapshot const snap = selected(saved.snapshot, sel, shown, thread_shown);
  std::string const json = a.value("--json");
  if (!json.empty()) {
    write_file(json, nsk::detail::report::summary_json(snap, saved.nsightkit_version));
    if (json == "-") return 0;
  }
  std::string text = nsk::detail::report::format_table(snap, per_thread);
  if (!sel.filters.empty() || sel.depth != 0 || sel.top != 0) {
    std::string how;
    for (std::string const& g : sel.filters) how += ", --filter " + nsk::detail::quote_value(g);
    if (sel.depth != 0) how += ", --depth " + std::to_string(sel.depth);
    if (sel.top != 0) how += ", --top " + std::to_string(sel.top) + " by " + sort;
    text += "\n(stats: " + std::to_string(shown.rows) + " of " +
            std::to_string(saved.snapshot.paths.size()) + " paths shown (" + how.substr(2) + "); " +
            std::to_string(shown.ancestors) +
            " of them only as ancestors of shown paths, so that the tree reads)\n";
  }
  write_file("-", text);
  return 0;
}

}  // namespace

int run_stats(Invocation const& call) {
  return run_subcommand("nsightkit stats", help, call.args,
                        {{"--sort", nullptr, true, false},
                         {"--filter", nullptr, true, true},
                         {"--depth", nullptr, true, false},
                         {"--top", nullptr, true, false},
                         {"--per-thread", nullptr, false, false},
                         {"--json", nullptr, true, false}},
                        stats);
}

}  // namespace nsightkit_command
