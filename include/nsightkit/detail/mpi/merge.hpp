// Internal: every rank's report merged into one view — per path the min / median / max over the
// ranks, the slowest rank and its excess, the straggler rule and the handling of collectives.
// The one implementation of the merge: the MPI component (detail/mpi/gather.hpp, which moves the
// data between ranks) and `nsightkit merge` (tools/nsightkit/merge.cpp, which reads per-rank
// files) both hand it ReportSnapshots through rank_report(). Pure C++.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/mpi/glob.hpp>
#include <nsightkit/detail/report/output/gpu_columns.hpp>
#include <nsightkit/detail/report/path_names.hpp>
#include <nsightkit/detail/text.hpp>
#include <nsightkit/report_types.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::mpi {

/// One path component: a range's domain and name.
struct Component {
  std::string domain;
  std::string name;
};

/// Where GPU numbers come from: CUPTI's busy time of the work a path launched, on any stream (a
/// collective's kernels on NCCL's stream too), or the span between CUDA events on the thread's
/// current stream. The two measure different things: a merged row whose ranks differ is "mixed".
enum class GpuFrom : std::uint8_t { none, events, cupti, mixed };

/// The name every merged output uses ("" for none: null in JSON, empty in CSV).
inline char const* to_string(GpuFrom g) noexcept {
  switch (g) {
    case GpuFrom::events: return "events";
    case GpuFrom::cupti: return "cupti";
    case GpuFrom::mixed: return "mixed";
    case GpuFrom::none: break;
  }
  return "";
}

/// One row of one rank: a path (or the steps, or a start/end range) with its CPU and GPU totals.
struct RankRow {
  std::vector<Component> key;  ///< exact components, outermost first (a name may hold '/')
  std::string path;            ///< as printed, components joined by '/'
  std::string label;           ///< the last component as printed
  std::size_t depth{0};
  std::uint64_t count{0};
  std::int64_t total_ns{0};
  std::uint64_t gpu_count{0};       ///< cupti: calls that launched work; events: calls timed
  std::int64_t gpu_total_ns{0};     ///< cupti: busy time; events: span
  GpuFrom gpu_from{GpuFrom::none};  ///< none: no GPU time on this rank
  /// Has GPU time on this rank.
  [[nodiscard]] bool has_gpu() const noexcept { return gpu_from != GpuFrom::none; }
};

/// A mark's count on one rank.
struct RankMark {
  std::string domain;
  std::string name;
  std::uint64_t count{0};
};

/// What the merge needs of one rank's report: the parts of its summary (and trace) it uses.
struct RankReport {
  int rank{0};
  bool present{false};        ///< false: the rank took part without a report (never enabled)
  bool rank_assigned{false};  ///< the file had no rank; `nsightkit merge --assign-ranks` gave one
  long pid{0};
  std::string version;
  std::int64_t run_ns{0};
  bool captured_only{false};
  std::string gpu_error;
  std::string summary_file;  ///< the summary file this rank wrote itself, or ""
  std::vector<RankRow> rows;
  bool has_steps{false};
  std::uint64_t steps_count{0};
  std::int64_t steps_total_ns{0};
  std::vector<RankRow> start_end;  ///< key: one component (domain, name)
  std::vector<RankMark> marks;
  // Its trace, when the merged one is written.
  bool has_trace{false};
  std::string trace_file;  ///< the trace file this rank wrote itself, or ""
  bool steady_clock{true};
  std::int64_t origin_ns{0};  ///< its report's time origin on its own steady clock
  std::uint64_t events_dropped{0};
  std::uint64_t async_ids{0};  ///< distinct start/end ids in its trace
  int node{0};                 ///< the lowest rank on its host (ranks of one host share a clock)
  std::string host;            ///< MPI_Get_processor_name
};

/// The RankReport of `snap` (the rank's report at one moment) for rank `rank`.
inline RankReport rank_report(ReportSnapshot const& snap, int rank) {
  RankReport r;
  r.rank = rank;
  r.present = true;
  r.pid = snap.pid;
  r.run_ns = snap.run_ns;
  r.captured_only = snap.captured_only;
  r.gpu_error = valid_utf8(snap.gpu.error);
  // CUPTI's attributed work wherever the rank has any; its event spans only where it has none.
  bool const cupti = report::any_work(snap.paths);
  std::vector<Component> stack;
  for (PathStats const& p : snap.paths) {
    // The key from depth and (domain, name), as the reader builds it from a summary's rows.
    if (p.depth > stack.size()) continue;  // no parent before it: never in a snapshot
    stack.resize(p.depth);
    stack.push_back(Component{valid_utf8(p.domain), valid_utf8(p.name)});
    RankRow row;
    row.key = stack;
    row.path = valid_utf8(p.path);
    row.label = report::component(stack.back().domain, stack.back().name);
    row.depth = p.depth;
    row.count = p.cpu.count;
    row.total_ns = p.cpu.total_ns;
    if (cupti) {
      // The summary's "gpu_work" is not null.
      if (report::has_work(p)) row.gpu_from = GpuFrom::cupti;
      row.gpu_count = p.work.calls_with_work;
      row.gpu_total_ns = p.work.busy_ns;
    } else {
      // The summary's "gpu" is not null.
      if (p.gpu.count != 0) row.gpu_from = GpuFrom::events;
      row.gpu_count = p.gpu.count;
      row.gpu_total_ns = p.gpu.total_ns;
    }
    r.rows.push_back(std::move(row));
  }
  r.has_steps = snap.steps.count != 0;
  r.steps_count = snap.steps.count;
  r.steps_total_ns = snap.steps.total_ns;
  for (NamedStats const& n : snap.start_end) {
    RankRow row;
    row.key = {Component{valid_utf8(n.domain), valid_utf8(n.name)}};
    row.label = report::component(row.key[0].domain, row.key[0].name);
    row.path = row.label;
    row.count = n.time.count;
    row.total_ns = n.time.total_ns;
    r.start_end.push_back(std::move(row));
  }
  for (MarkStats const& m : snap.marks) {
    r.marks.push_back(RankMark{valid_utf8(m.domain), valid_utf8(m.name), m.count});
  }
  for (ThreadStats const& t : snap.threads) r.events_dropped += t.trace_dropped;
  return r;
}

/// The source of a rank's GPU times (none: no path has any).
inline GpuFrom gpu_from(RankReport const& r) noexcept {
  for (RankRow const& row : r.rows) {
    if (row.gpu_from != GpuFrom::none) return row.gpu_from;
  }
  return GpuFrom::none;
}

// ---------------------------------------------------------------------------------------------
// Statistics across ranks

/// CPU wall time or GPU time.
enum class Basis { cpu, gpu };

/// The median of `v` (sorted here); with an even count the mean of the two middle values.
inline double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::size_t const n = v.size();
  if (n == 0) return 0.0;
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/// min / median / max over the ranks, the slowest and fastest rank (lowest rank on ties), and
/// how far the slowest exceeds the median of the *other* ranks (with two ranks: the other rank).
struct Spread {
  double min_ns{0};
  double median_ns{0};
  double max_ns{0};
  int slowest{0};
  int fastest{0};
  bool has_others{false};  ///< more than one rank
  double others_median_ns{0};
  double excess_ns{0};
  bool has_excess{false};  ///< others' median > 0
  double excess{0};
};

using PerRank = std::map<int, double>;

inline std::optional<Spread> spread(PerRank const& per_rank) {
  if (per_rank.empty()) return std::nullopt;
  Spread s;
  std::vector<double> values;
  auto slowest = per_rank.begin();
  auto fastest = per_rank.begin();
  for (auto it = per_rank.begin(); it != per_rank.end(); ++it) {
    values.push_back(it->second);
    if (it->second > slowest->second) slowest = it;
    if (it->second < fastest->second) fastest = it;
  }
  s.min_ns = *std::min_element(values.begin(), values.end());
  s.max_ns = *std::max_element(values.begin(), values.end());
  s.median_ns = median_of(values);
  s.slowest = slowest->first;
  s.fastest = fastest->first;
  if (per_rank.size() > 1) {
    std::vector<double> others;
    for (auto const& [r, v] : per_rank) {
      if (r != s.slowest) others.push_back(v);
    }
    s.has_others = true;
    s.others_median_ns = median_of(others);
    s.excess_ns = slowest->second - s.others_median_ns;
    s.has_excess = s.others_median_ns > 0;
    if (s.has_excess) s.excess = s.excess_ns / s.others_median_ns;
  }
  return s;
}

/// Which kind of row: a range path, the capture-window steps, a start/end range.
enum class Section { paths, steps, start_end };

inline char const* to_string(Section s) noexcept {
  switch (s) {
    case Section::paths: return "paths";
    case Section::steps: return "steps";
    case Section::start_end: return "start/end";
  }
  return "?";
}

/// One path (or the steps, or a start/end range) across ranks.
struct Merged {
  Section section{Section::paths};
  std::vector<Component> key;
  std::string path;
  std::string label;
  std::size_t depth{0};
  std::map<int, RankRow const*> ranks;  ///< the ranks that have it

  [[nodiscard]] PerRank per_rank(Basis basis) const {
    PerRank out;
    for (auto const& [r, row] : ranks) {
      if (basis == Basis::cpu) {
        out[r] = static_cast<double>(row->total_ns);
      } else if (row->has_gpu()) {
        out[r] = static_cast<double>(row->gpu_total_ns);
      }
    }
    return out;
  }
  [[nodiscard]] std::map<int, std::uint64_t> counts(Basis basis) const {
    std::map<int, std::uint64_t> out;
    for (auto const& [r, row] : ranks) {
      if (basis == Basis::cpu) {
        out[r] = row->count;
      } else if (row->has_gpu()) {
        out[r] = row->gpu_count;
      }
    }
    return out;
  }
  [[nodiscard]] std::optional<Spread> stats(Basis basis) const { return spread(per_rank(basis)); }
  /// The source of the ranks' GPU times here: mixed when they differ, none without any.
  [[nodiscard]] GpuFrom gpu_from() const noexcept {
    GpuFrom out = GpuFrom::none;
    for (auto const& [r, row] : ranks) {
      if (row->gpu_from == GpuFrom::none) continue;
      if (out != GpuFrom::none && out != row->gpu_from) return GpuFrom::mixed;
      out = row->gpu_from;
    }
    return out;
  }
  /// All ranks' time over all their calls.
  [[nodiscard]] std::optional<double> mean_per_call(Basis basis) const {
    std::uint64_t calls = 0;
    for (auto const& [r, c] : counts(basis)) calls += c;
    if (calls == 0) return std::nullopt;
    double total = 0;
    for (auto const& [r, v] : per_rank(basis)) total += v;
    return total / static_cast<double>(calls);
  }
};

/// An unambiguous text of a key (lengths before the parts), for maps.
inline std::string key_text(std::vector<Component> const& key, std::size_t n) {
  std::string t;
  for (std::size_t i = 0; i < n && i < key.size(); ++i) {
    t += std::to_string(key[i].domain.size()) + ':' + key[i].domain;
    t += std::to_string(key[i].name.size()) + ':' + key[i].name;
  }
  return t;
}

/// The merged rows of the present ranks (`ranks` sorted by rank).
struct MergedView {
  std::vector<RankReport const*> ranks;
  std::deque<Merged> store;
  std::deque<RankRow> step_rows;  // the steps of each rank, as rows
  std::vector<Merged const*> tree;
  Merged const* steps{nullptr};
  std::vector<Merged const*> start_end;

  [[nodiscard]] std::vector<int> rank_numbers() const {
    std::vector<int> out;
    for (RankReport const* r : ranks) out.push_back(r->rank);
    return out;
  }
};

/// Merged paths in tree order (a parent before its children, siblings by median CPU total, larger
/// first, ties in the order first seen), then the steps and the start/end ranges.
inline void merge_rows(MergedView& v) {
  std::map<std::string, Merged*> paths;
  std::vector<Merged*> order;
  for (RankReport const* s : v.ranks) {
    for (RankRow const& row : s->rows) {
      std::string const k = key_text(row.key, row.key.size());
      Merged*& m = paths[k];
      if (m == nullptr) {
        m = &v.store.emplace_back();
        m->section = Section::paths;
        m->key = row.key;
        m->path = row.path;
        m->label = row.label;
        m->depth = row.depth;
        order.push_back(m);
      }
      m->ranks[s->rank] = &row;
    }
  }
  std::map<std::string, std::vector<Merged*>> children;
  for (Merged* m : order) {
    std::string const parent = key_text(m->key, m->key.size() - 1);
    children[m->key.size() > 1 && paths.count(parent) != 0 ? parent : std::string{"\x01root"}]
        .push_back(m);
  }
  auto weight = [](Merged const* m) { return m->stats(Basis::cpu)->median_ns; };
  // Depth-first, iteratively: a deep tree must not exhaust the stack.
  std::vector<std::pair<std::vector<Merged*>, std::size_t>> stack;
  auto push = [&](std::string const& parent) {
    auto it = children.find(parent);
    if (it == children.end()) return;
    std::vector<Merged*> kids = it->second;
    std::stable_sort(kids.begin(), kids.end(),
                     [&](Merged const* a, Merged const* b) { return weight(a) > weight(b); });
    stack.emplace_back(std::move(kids), 0);
  };
  push("\x01root");
  while (!stack.empty()) {
    auto& [kids, next] = stack.back();
    if (next == kids.size()) {
      stack.pop_back();
      continue;
    }
    Merged* m = kids[next++];
    v.tree.push_back(m);
    push(key_text(m->key, m->key.size()));
  }

  Merged* steps = nullptr;
  for (RankReport const* s : v.ranks) {
    if (!s->has_steps) continue;
    if (steps == nullptr) {
      steps = &v.store.emplace_back();
      steps->section = Section::steps;
      steps->key = {Component{"", "steps"}};
      steps->path = "capture-window steps";
      steps->label = "steps";
    }
    RankRow& row = v.step_rows.emplace_back();
    row.path = "capture-window steps";
    row.label = "steps";
    row.count = s->steps_count;
    row.total_ns = s->steps_total_ns;
    steps->ranks[s->rank] = &row;
  }
  v.steps = steps;
  std::map<std::string, Merged*> se;
  for (RankReport const* s : v.ranks) {
    for (RankRow const& row : s->start_end) {
      Merged*& m = se[key_text(row.key, row.key.size())];
      if (m == nullptr) {
        m = &v.store.emplace_back();
        m->section = Section::start_end;
        m->key = row.key;
        m->path = row.path;
        m->label = row.label;
        v.start_end.push_back(m);
      }
      m->ranks[s->rank] = &row;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Stragglers

/// The straggler rule's thresholds and the patterns that mark collectives (see MergeOptions).
struct Thresholds {
  double excess{0.10};                   ///< relative, over the other ranks' median
  double excess_ns{1e6};                 ///< absolute
  double share{0.05};                    ///< of the median run time, for a path to be judged
  std::vector<std::string> collectives;  ///< lower-case glob patterns
};

/// Whether a component of the path names a collective (its time is mostly waiting for others).
inline bool is_collective(Merged const& m, Thresholds const& th) {
  if (m.section != Section::paths) return false;
  for (Component const& c : m.key) {
    std::string const name = ascii_lower(c.name);
    for (std::string const& pat : th.collectives) {
      if (glob_match(name, pat)) return true;
    }
  }
  return false;
}

/// The median total over the median run time.
inline double share_of_run(Merged const& m, Basis basis, double run_median) {
  auto const st = m.stats(basis);
  return st && run_median > 0 ? st->median_ns / run_median : 0.0;
}

/// Whether `m` is a collective whose parent is not one (an outermost collective).
inline bool outermost_collective(Merged const& m,
                                 std::map<std::string, Merged const*> const& by_key,
                                 Thresholds const& th) {
  if (!is_collective(m, th)) return false;
  auto const parent = by_key.find(key_text(m.key, m.key.size() - 1));
  return m.key.size() < 2 || parent == by_key.end() || !is_collective(*parent->second, th);
}

inline std::map<std::string, Merged const*> keyed(std::vector<Merged const*> const& rows) {
  std::map<std::string, Merged const*> by_key;
  for (Merged const* m : rows) by_key[key_text(m->key, m->key.size())] = m;
  return by_key;
}

/// Per path key and rank: the time of the outermost collectives below the path.
inline std::map<std::string, PerRank> collective_waits(std::vector<Merged const*> const& rows,
                                                       Basis basis, Thresholds const& th) {
  auto const by_key = keyed(rows);
  std::map<std::string, PerRank> waits;
  for (Merged const* m : rows) {
    if (!outermost_collective(*m, by_key, th)) continue;
    for (std::size_t depth = 1; depth < m->key.size(); ++depth) {
      PerRank& acc = waits[key_text(m->key, depth)];
      for (auto const& [r, v] : m->per_rank(basis)) acc[r] += v;
    }
  }
  return waits;
}

/// Per rank: the summed totals of the outermost collective paths; nullopt without any collective
/// path (with `basis` gpu: without any timed on the GPU).
inline std::optional<PerRank> collective_time(std::vector<Merged const*> const& tree, Basis basis,
                                              Thresholds const& th) {
  auto const by_key = keyed(tree);
  PerRank out;
  bool found = false;
  for (Merged const* m : tree) {
    if (!outermost_collective(*m, by_key, th)) continue;
    for (auto const& [r, v] : m->per_rank(basis)) {
      found = true;
      out[r] += v;
    }
  }
  if (!found) return std::nullopt;
  return out;
}

/// A rank flagged on a path.
struct Finding {
  int rank{0};
  Section section{Section::paths};
  std::string path;
  std::size_t depth{0};
  double total_ns{0};
  double others_median_ns{0};
  double excess_ns{0};
  bool has_excess{false};  ///< false: the others' median is 0 (infinitely slower)
  double excess{0};
  double waiting_excluded_ns{0};
  double share{0};
  std::size_t ranks_compared{0};
};

struct Stragglers {
  std::vector<Finding> findings;
  std::map<int, int> slowest_counts;  ///< per rank: the judged paths where it is the slowest
  int judged{0};
  std::vector<Merged const*> collectives;  ///< collective paths holding enough of the run
};

/// A rank is flagged on a row when its total exceeds the median of the other ranks' totals by
/// more than th.excess (relative) and th.excess_ns (absolute), on a row holding at least th.share
/// of the median run time that is not a collective; time inside collectives is subtracted first
/// (on the GPU, a path holding one is not judged, nor a mixed row). Every rank is tested, not only
/// the slowest.
inline Stragglers find_stragglers(std::vector<Merged const*> const& rows, Basis basis,
                                  double run_median, Thresholds const& th) {
  Stragglers out;
  auto const waiting = collective_waits(rows, basis, th);
  for (Merged const* m : rows) {
    // CUPTI busy time on some ranks and event spans on others: no comparison.
    if (basis == Basis::gpu && m->gpu_from() == GpuFrom::mixed) continue;
    double const share = share_of_run(*m, basis, run_median);
    if (is_collective(*m, th)) {
      if (m->per_rank(basis).size() >= 2 && share >= th.share) out.collectives.push_back(m);
      continue;
    }
    auto const w = waiting.find(key_text(m->key, m->key.size()));
    PerRank const no_wait;
    PerRank const& wait = w != waiting.end() ? w->second : no_wait;
    if (!wait.empty() && basis == Basis::gpu) continue;
    PerRank per_rank;
    for (auto const& [r, v] : m->per_rank(basis)) {
      auto const it = wait.find(r);
      per_rank[r] = std::max(0.0, v - (it != wait.end() ? it->second : 0.0));
    }
    if (per_rank.size() < 2 || share < th.share) continue;
    ++out.judged;
    ++out.slowest_counts[spread(per_rank)->slowest];
    for (auto const& [r, v] : per_rank) {
      std::vector<double> others;
      for (auto const& [q, x] : per_rank) {
        if (q != r) others.push_back(x);
      }
      double const om = median_of(others);
      double const excess_ns = v - om;
      bool const finite = om > 0;
      double const rel = finite ? excess_ns / om : 0.0;
      bool const over = finite ? rel > th.excess : excess_ns > 0;
      if (!over || !(excess_ns > th.excess_ns)) continue;
      Finding f;
      f.rank = r;
      f.section = m->section;
      f.path = m->path;
      f.depth = m->depth;
      f.total_ns = v;
      f.others_median_ns = om;
      f.excess_ns = excess_ns;
      f.has_excess = finite;
      f.excess = rel;
      auto const it = wait.find(r);
      f.waiting_excluded_ns = it != wait.end() ? it->second : 0.0;
      f.share = share;
      f.ranks_compared = per_rank.size();
      out.findings.push_back(std::move(f));
    }
  }
  return out;
}

/// The rows the straggler rule judges: the paths, and on CPU time the steps.
inline std::vector<Merged const*> judged_rows(MergedView const& v, Basis basis) {
  std::vector<Merged const*> rows = v.tree;
  if (v.steps != nullptr && basis == Basis::cpu) rows.push_back(v.steps);
  return rows;
}

/// The median run time of the present ranks.
inline Spread run_spread(MergedView const& v) {
  PerRank run;
  for (RankReport const* r : v.ranks) run[r->rank] = static_cast<double>(r->run_ns);
  auto const s = spread(run);
  return s ? *s : Spread{};
}

}  // namespace detail::mpi
NSIGHTKIT_DETAIL_END_NAMESPACE
