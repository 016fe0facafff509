// Internal: the merged report's table and the number formats every merged output shares
// ("812 ns", "3.25 us"; a median is an integer when it is one). The default table (tree order,
// CPU time) is what rank 0 prints under MPI; `nsightkit merge` adds its other views (sorted, GPU
// time, the largest paths only, a column per rank). The merged summary JSON and the CSV are in
// merge_json.hpp.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/fmt_format.hpp>
#include <nsightkit/detail/json.hpp>
#include <nsightkit/detail/mpi/merge.hpp>
#include <nsightkit/detail/report/output/text_sink.hpp>
#include <nsightkit/detail/report/path_names.hpp>
#include <nsightkit/detail/text.hpp>
#include <nsightkit/mpi_types.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::mpi {

/// A warning or note of the merge (printed by rank 0, kept in the merged JSON).
struct Message {
  char const* level;  ///< "warning" or "note"
  std::string text;
};

// ---------------------------------------------------------------------------------------------
// Numbers as the offline tool prints them

/// Three significant digits: "812 ns", "3.25 us", "12.3 ms", "1.23 s".
inline std::string fmt_ns(double ns) {
  if (std::abs(ns) < 999.5) return fmt::format("{:.0f} ns", ns);
  static constexpr std::pair<double, char const*> units[] = {{1e3, "us"}, {1e6, "ms"}, {1e9, "s"}};
  for (auto const& [scale, unit] : units) {
    double const v = ns / scale;
    if (std::abs(v) < 999.5 || scale == 1e9) {
      if (std::abs(v) < 9.995) return fmt::format("{:.2f} {}", v, unit);
      if (std::abs(v) < 99.95) return fmt::format("{:.1f} {}", v, unit);
      return fmt::format("{:.0f} {}", v, unit);
    }
  }
  return "-";
}

inline std::string fmt_ns(std::optional<double> ns) { return ns ? fmt_ns(*ns) : "-"; }

/// A number that is an integer when it is one (totals, medians of totals).
inline std::string num(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::abs(v) < 9007199254740992.0)
    return fmt::format("{}", static_cast<std::int64_t>(v));
  return fmt::format("{}", v);
}

/// A quotient, always written as a floating-point number ("1.0", "0.25").
inline std::string flt(double v) {
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

// ---------------------------------------------------------------------------------------------
// Table

/// Left-aligned first column, the others right-aligned, two spaces apart (widths in code points).
inline void render_table(std::vector<std::string>& lines, std::vector<std::string> const& header,
                         std::vector<std::vector<std::string>> const& rows) {
  std::vector<std::size_t> widths(header.size(), 0);
  auto measure = [&](std::vector<std::string> const& r) {
    for (std::size_t i = 0; i < r.size() && i < widths.size(); ++i)
      widths[i] = std::max(widths[i], code_points(r[i]));
  };
  measure(header);
  for (auto const& r : rows) measure(r);
  auto emit = [&](std::vector<std::string> const& r) {
    std::string line;
    for (std::size_t i = 0; i < r.size(); ++i) {
      std::size_t const pad = widths[i] - code_points(r[i]);
      if (i != 0) line += "  ";
      if (i != 0) line.append(pad, ' ');
      line += r[i];
      if (i == 0) line.append(pad, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    lines.push_back(std::move(line));
  };
  emit(header);
  for (auto const& r : rows) emit(r);
}

inline std::string fmt_excess(std::optional<Spread> const& st) {
  if (!st || !st->has_others) return "-";
  if (!st->has_excess) return st->excess_ns > 0 ? "inf" : "+0%";
  return fmt::format("+{:.0f}%", st->excess * 100);
}

inline std::string fmt_calls(std::map<int, std::uint64_t> const& counts) {
  if (counts.empty()) return "-";
  std::uint64_t lo = counts.begin()->second, hi = lo;
  for (auto const& [r, c] : counts) {
    lo = std::min(lo, c);
    hi = std::max(hi, c);
  }
  return lo == hi ? std::to_string(lo) : fmt::format("{}..{}", lo, hi);
}

inline std::string join_ranks(std::vector<int> const& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size(); ++i)
    out += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
  return out;
}

/// "0, 1, 2" or, for long lists, the first ones and how many more (the tool's short_list).
inline std::string short_list(std::vector<int> const& ranks, std::size_t most = 12) {
  if (ranks.size() <= most) return join_ranks(ranks);
  std::vector<int> const head(ranks.begin(), ranks.begin() + static_cast<std::ptrdiff_t>(most));
  return fmt::format("{} and {} more", join_ranks(head), ranks.size() - most);
}

/// Per GPU source (cupti first, then events), the ranks whose GPU times come from it.
inline std::vector<std::pair<GpuFrom, std::vector<int>>> gpu_sources(
    std::vector<RankReport const*> const& ranks) {
  std::vector<std::pair<GpuFrom, std::vector<int>>> out;
  for (GpuFrom g : {GpuFrom::cupti, GpuFrom::events}) {
    std::vector<int> have;
    for (RankReport const* r : ranks) {
      if (gpu_from(*r) == g) have.push_back(r->rank);
    }
    if (!have.empty()) out.emplace_back(g, std::move(have));
  }
  return out;
}

/// "cupti on rank(s) 0, 1" or, when the ranks differ, "cupti on rank(s) 0; events on rank(s) 1".
inline std::string gpu_sources_text(std::vector<std::pair<GpuFrom, std::vector<int>>> const& s) {
  std::string out;
  for (auto const& [g, ranks] : s) {
    out += out.empty() ? "" : "; ";
    out += fmt::format("{} on rank(s) {}", to_string(g), short_list(ranks));
  }
  return out;
}

/// The table's cells of `rows` on `basis`: the name (indented by depth in tree order, else the
/// full path), ranks present, calls, %run, min / median / max, slowest rank, excess, mean per
/// call; on GPU time the source; with `per_rank_cols` each rank's total ("missing": the rank lacks
/// the path; "-": it has the path but no time of this kind).
inline std::vector<std::vector<std::string>> table_rows(std::vector<Merged const*> const& rows,
                                                        Basis basis,
                                                        std::vector<int> const& all_ranks,
                                                        double run_median, bool tree,
                                                        bool per_rank_cols) {
  std::vector<std::vector<std::string>> out;
  for (Merged const* m : rows) {
    PerRank const per_rank = m->per_rank(basis);
    auto const st = spread(per_rank);
    std::string name = tree ? std::string(2 * m->depth, ' ') + m->label : m->path;
    std::vector<std::string> cells{
        std::move(name),
        fmt::format("{}/{}", m->ranks.size(), all_ranks.size()),
        fmt_calls(m->counts(basis)),
        st ? fmt::format("{:.1f}%", share_of_run(*m, basis, run_median) * 100) : std::string{"-"},
        st ? fmt_ns(st->min_ns) : "-",
        st ? fmt_ns(st->median_ns) : "-",
        st ? fmt_ns(st->max_ns) : "-",
        st && per_rank.size() > 1 ? fmt::format("rank {}", st->slowest) : "-",
        fmt_excess(st),
        fmt_ns(m->mean_per_call(basis))};
    if (basis == Basis::gpu) {
      char const* source = to_string(m->gpu_from());
      cells.emplace_back(*source != '\0' ? source : "-");
    }
    if (per_rank_cols) {
      for (int r : all_ranks) {
        auto const it = per_rank.find(r);
        cells.push_back(it != per_rank.end()     ? fmt_ns(it->second)
                        : m->ranks.count(r) != 0 ? "-"
                                                 : "missing");
      }
    }
    out.push_back(std::move(cells));
  }
  return out;
}

inline std::vector<std::string> straggler_lines(Stragglers const& s, Basis basis,
                                                Thresholds const& th, std::size_t n_ranks,
                                                std::size_t max_paths) {
  char const* what = basis == Basis::cpu ? "CPU" : "GPU";
  std::vector<std::string> lines{
      fmt::format("stragglers ({} time): a rank is flagged on a path when its total exceeds the "
                  "median of the",
                  what),
      fmt::format("other ranks' totals by more than {:g}% and by more than {:g} ms; only paths "
                  "holding >= {:g}%",
                  th.excess * 100, th.excess_ns / 1e6, th.share * 100),
      "of the run are judged, collectives excepted;",
      basis == Basis::gpu
          ? "paths holding a collective are not judged (it overlaps them on another stream)"
          : "a path's time inside collectives (waiting for other ranks) is subtracted first"};
  if (n_ranks < 2) {
    lines.emplace_back("  only one rank: nothing to compare");
    return lines;
  }
  if (s.judged == 0) {
    lines.emplace_back("  no path holds enough of the run to judge");
  } else if (s.findings.empty()) {
    lines.push_back(fmt::format(
        "  none: on all {} judged paths every rank is within the thresholds", s.judged));
  }
  std::vector<int> order;
  std::map<int, std::vector<Finding const*>> by_rank;
  for (Finding const& f : s.findings) {
    if (by_rank.count(f.rank) == 0) order.push_back(f.rank);
    by_rank[f.rank].push_back(&f);
  }
  auto largest = [&](int r) {
    double m = by_rank[r].front()->excess_ns;
    for (Finding const* f : by_rank[r]) m = std::max(m, f->excess_ns);
    return m;
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return largest(a) > largest(b); });
  std::string const others = n_ranks == 2 ? "other rank" : "others' median";
  for (int r : order) {
    std::vector<Finding const*> const& fs = by_rank[r];
    Finding const* top = fs.front();
    for (Finding const* f : fs) {
      if (f->excess_ns > top->excess_ns) top = f;
    }
    lines.push_back(fmt::format("  rank {}: slow on {} of {} judged paths, by up to {} ({})", r,
                                fs.size(), s.judged, fmt_ns(top->excess_ns), top->path));
    std::vector<Finding const*> shown = fs;
    std::stable_sort(shown.begin(), shown.end(), [](Finding const* a, Finding const* b) {
      return a->excess_ns > b->excess_ns;
    });
    if (shown.size() > max_paths) shown.resize(max_paths);
    std::set<Finding const*> const keep(shown.begin(), shown.end());
    std::vector<std::vector<std::string>> rows;
    for (Finding const* f : fs) {
      if (keep.count(f) == 0) continue;
      rows.push_back({std::string(2 * f->depth, ' ') + f->path, fmt_ns(f->total_ns),
                      fmt_ns(f->others_median_ns), "+" + fmt_ns(f->excess_ns),
                      f->has_excess ? fmt::format("+{:.0f}%", f->excess * 100) : "inf"});
    }
    std::vector<std::string> table;
    render_table(table, {"path", fmt::format("rank {}", r), others, "excess", "%"}, rows);
    for (auto const& t : table) lines.push_back("    " + t);
    if (fs.size() > shown.size()) {
      lines.push_back(
          fmt::format("    ... and {} more (--straggler-paths)", fs.size() - shown.size()));
    }
  }
  if (s.judged != 0) {
    std::vector<std::pair<int, int>> counts(s.slowest_counts.begin(), s.slowest_counts.end());
    std::stable_sort(counts.begin(), counts.end(),
                     [](auto const& a, auto const& b) { return a.second > b.second; });
    std::string text;
    for (auto const& [r, n] : counts)
      text += fmt::format("{}rank {} on {}", text.empty() ? "" : ", ", r, n);
    lines.push_back(
        "  slowest rank per judged path (some rank always is; not a verdict by itself): " + text);
  }
  for (Merged const* m : s.collectives) {
    auto const st = m->stats(basis);
    lines.push_back(fmt::format(
        "  collective {}: shortest on rank {} ({}, median {}): the last rank to arrive waits least",
        m->path, st->fastest, fmt_ns(st->min_ns), fmt_ns(st->median_ns)));
  }
  return lines;
}

/// The order of the merged table's paths.
enum class Order {
  tree,   ///< a parent before its children, siblings by median total (the default)
  total,  ///< largest median total first
  excess  ///< largest relative excess of the slowest rank first
};

/// The merge's options that change its results and its table (MergeOptions without the MPI parts;
/// the in-process merge keeps the table's defaults).
struct TextOptions {
  Thresholds thresholds;
  std::size_t straggler_paths{8};
  Basis basis{Basis::cpu};  ///< the table and the straggler rule on CPU or GPU time
  Order order{Order::tree};
  std::size_t top{0};    ///< only the N paths with the largest median total (0: every path)
  bool per_rank{false};  ///< a column with each rank's total
};

/// The merge's options from the public ones (nsightkit::mpi::MergeOptions, whose defaults both
/// merges use).
inline TextOptions text_options(nsightkit::mpi::MergeOptions const& m) {
  TextOptions o;
  o.thresholds.excess = m.min_excess_pct / 100.0;
  o.thresholds.excess_ns = m.min_excess_ms * 1e6;
  o.thresholds.share = m.min_share_pct / 100.0;
  for (std::string const& p : m.collectives) o.thresholds.collectives.push_back(ascii_lower(p));
  o.straggler_paths = m.straggler_paths == 0 ? 1 : m.straggler_paths;
  return o;
}

/// What each GPU source measures, as the GPU table says it.
inline char const* gpu_source_meaning(GpuFrom g) noexcept {
  return g == GpuFrom::cupti
             ? "busy time of the kernels, copies and memsets a path launched, on any stream "
               "(NCCL's too)"
             : "span between CUDA events on the thread's current stream (other streams unseen)";
}

/// The warning for ranks whose GPU times come from different sources ("" when they agree).
inline std::string mixed_sources_warning(std::vector<RankReport const*> const& ranks) {
  auto const sources = gpu_sources(ranks);
  if (sources.size() < 2) return {};
  return fmt::format(
      "the ranks' GPU times come from different sources ({}): CUPTI busy time and CUDA-event "
      "spans do not compare; GPU rows timed by both are \"mixed\" and not judged",
      gpu_sources_text(sources));
}

/// The paths of the table in the order `o` asks for, the N largest only with `o.top`.
inline std::vector<Merged const*> ordered_rows(std::vector<Merged const*> const& tree,
                                               TextOptions const& o) {
  auto median = [&](Merged const* m) {
    auto const st = m->stats(o.basis);
    return st ? st->median_ns : -1.0;
  };
  std::vector<Merged const*> rows = tree;
  if (o.top != 0 && rows.size() > o.top) {
    std::vector<Merged const*> by_total = rows;
    std::stable_sort(by_total.begin(), by_total.end(),
                     [&](Merged const* a, Merged const* b) { return median(a) > median(b); });
    by_total.resize(o.top);
    std::set<Merged const*> const keep(by_total.begin(), by_total.end());
    rows.erase(std::remove_if(rows.begin(), rows.end(),
                              [&](Merged const* m) { return keep.count(m) == 0; }),
               rows.end());
  }
  if (o.order == Order::total) {
    std::stable_sort(rows.begin(), rows.end(),
                     [&](Merged const* a, Merged const* b) { return median(a) > median(b); });
  } else if (o.order == Order::excess) {
    // Rows without an excess last; an infinite one (the others took no time) first.
    auto key = [&](Merged const* m) {
      auto const st = m->stats(o.basis);
      if (!st || !st->has_others) return std::pair<int, double>{1, 0.0};
      return std::pair<int, double>{
          0, st->has_excess ? -st->excess : -std::numeric_limits<double>::infinity()};
    };
    std::stable_sort(rows.begin(), rows.end(),
                     [&](Merged const* a, Merged const* b) { return key(a) < key(b); });
  }
  return rows;
}

/// The merged table: per path the ranks' totals on `o.basis`, then (CPU time) the steps and the
/// start/end ranges, marks, paths missing on some ranks, time in collectives and stragglers.
inline std::string format_table(MergedView const& v, TextOptions const& o) {
  std::vector<int> const all_ranks = v.rank_numbers();
  Spread const run = run_spread(v);
  bool const gpu_basis = o.basis == Basis::gpu;
  std::vector<std::string> lines{
      fmt::format("nsightkit merged report: {} ranks ({}); run time median {} (min {}, max {} on "
                  "rank {})",
                  all_ranks.size(), join_ranks(all_ranks), fmt_ns(run.median_ns),
                  fmt_ns(run.min_ns), fmt_ns(run.max_ns), run.slowest),
      fmt::format("{} per range path; a rank's total is the sum over its threads. min/median/max: "
                  "across the",
                  gpu_basis ? "GPU time" : "CPU wall time"),
      "ranks that have the path; slowest: the rank with the max; excess: how much the slowest "
      "exceeds the",
      "median of the other ranks (with 2 ranks: the other rank); %run: median total / median run "
      "time;",
      "mean/call: all ranks' time over all their calls"};
  auto const sources = gpu_sources(v.ranks);
  if (gpu_basis) {
    for (auto const& [g, ranks] : sources) {
      lines.push_back(fmt::format("source {} (rank(s) {}): {}", to_string(g), short_list(ranks),
                                  gpu_source_meaning(g)));
    }
    if (sources.size() > 1) {
      lines.emplace_back(
          "the ranks' sources differ: a row timed by both is \"mixed\" (its min/median/max "
          "compare busy time with spans) and not judged");
    }
  }
  lines.emplace_back("");
  std::vector<Merged const*> rows = ordered_rows(v.tree, o);
  if (gpu_basis) {
    rows.erase(std::remove_if(rows.begin(), rows.end(),
                              [](Merged const* m) { return m->per_rank(Basis::gpu).empty(); }),
               rows.end());
  }
  std::vector<std::string> header{"path",   "ranks", "calls",   "%run",   "min",
                                  "median", "max",   "slowest", "excess", "mean/call"};
  if (gpu_basis) header.emplace_back("source");
  if (o.per_rank) {
    for (int r : all_ranks) header.push_back(fmt::format("rank {}", r));
  }
  render_table(
      lines, header,
      table_rows(rows, o.basis, all_ranks, run.median_ns, o.order == Order::tree, o.per_rank));
  if (o.top != 0 && rows.size() < v.tree.size()) {
    lines.push_back(
        fmt::format("({} smaller paths not shown: --top {})", v.tree.size() - rows.size(), o.top));
  }
  bool const gpu = std::any_of(v.tree.begin(), v.tree.end(),
                               [](Merged const* m) { return !m->per_rank(Basis::gpu).empty(); });
  if (gpu && !gpu_basis) {
    lines.push_back(
        fmt::format("(GPU times present, from {}: nsightkit merge --gpu shows and judges them)",
                    gpu_sources_text(sources)));
    if (sources.size() > 1) {
      lines.emplace_back(
          "(the ranks' GPU sources differ: CUPTI busy time and CUDA-event spans do not compare; "
          "rows timed by both are \"mixed\" and not judged)");
    }
  }
  if (v.steps != nullptr && !gpu_basis) {
    lines.emplace_back("");
    lines.emplace_back("capture-window steps:");
    render_table(lines, header,
                 table_rows({v.steps}, Basis::cpu, all_ranks, run.median_ns, false, o.per_rank));
  }
  if (!v.start_end.empty() && !gpu_basis) {
    lines.emplace_back("");
    lines.emplace_back("start/end ranges (by name, not part of paths):");
    render_table(lines, header,
                 table_rows(v.start_end, Basis::cpu, all_ranks, run.median_ns, false, o.per_rank));
  }
  // Marks: by domain and name, in the order first seen.
  std::vector<std::pair<Component, std::map<int, std::uint64_t>>> marks;
  for (RankReport const* s : v.ranks) {
    for (RankMark const& mk : s->marks) {
      auto it = std::find_if(marks.begin(), marks.end(), [&](auto const& e) {
        return e.first.domain == mk.domain && e.first.name == mk.name;
      });
      if (it == marks.end()) it = marks.insert(marks.end(), {Component{mk.domain, mk.name}, {}});
      it->second[s->rank] = mk.count;
    }
  }
  if (!marks.empty()) {
    lines.emplace_back("");
    lines.emplace_back("marks:");
    for (auto const& [mark, per_rank] : marks) {
      std::string const label = report::component(mark.domain, mark.name);
      std::set<std::uint64_t> counts;
      for (auto const& [r, c] : per_rank) counts.insert(c);
      if (counts.size() == 1 && per_rank.size() == all_ranks.size()) {
        lines.push_back(fmt::format("  {}: {} on every rank", label, *counts.begin()));
      } else {
        std::string text;
        for (int r : all_ranks) {
          auto const it = per_rank.find(r);
          text += fmt::format("{}rank {} {}", text.empty() ? "" : ", ", r,
                              it != per_rank.end() ? it->second : 0);
        }
        lines.push_back(fmt::format("  {}: {}", label, text));
      }
    }
  }
  std::vector<std::string> missing;
  for (Merged const* m : v.tree) {
    if (m->ranks.size() >= all_ranks.size()) continue;
    std::vector<int> lacking;
    for (int r : all_ranks) {
      if (m->ranks.count(r) == 0) lacking.push_back(r);
    }
    missing.push_back(fmt::format("  {}: not on rank(s) {}", m->path, join_ranks(lacking)));
  }
  if (!missing.empty()) {
    lines.emplace_back("");
    lines.emplace_back("paths missing on some ranks:");
    lines.insert(lines.end(), missing.begin(), missing.end());
  }
  if (auto const ct = collective_time(v.tree, o.basis, o.thresholds)) {
    lines.emplace_back("");
    lines.push_back(fmt::format(
        "time in collectives ({} time): per rank, the outermost paths matching a collective "
        "pattern",
        gpu_basis ? "GPU" : "CPU"));
    std::vector<std::vector<std::string>> cells;
    for (RankReport const* s : v.ranks) {
      auto const it = ct->find(s->rank);
      double const t = it != ct->end() ? it->second : 0.0;
      cells.push_back({fmt::format("rank {}", s->rank), fmt_ns(t),
                       s->run_ns > 0
                           ? fmt::format("{:.1f}%", 100.0 * t / static_cast<double>(s->run_ns))
                           : "-"});
    }
    render_table(lines, {"rank", "in collectives", "% of its run"}, cells);
  }
  lines.emplace_back("");
  Stragglers const s =
      find_stragglers(judged_rows(v, o.basis), o.basis, run.median_ns, o.thresholds);
  auto const sl = straggler_lines(s, o.basis, o.thresholds, all_ranks.size(), o.straggler_paths);
  lines.insert(lines.end(), sl.begin(), sl.end());
  std::string out;
  for (auto const& l : lines) {
    out += l;
    out += '\n';
  }
  return out;
}

}  // namespace detail::mpi
NSIGHTKIT_DETAIL_END_NAMESPACE
