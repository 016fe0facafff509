// `nsightkit merge`: the per-rank report files of one run written without MPI, merged into one
// view by the merge the MPI component uses on rank 0 (detail/mpi/merge.hpp, merge_text.hpp,
// merge_json.hpp, trace.hpp): the files are read back into snapshots and handed to it the way
// each rank hands over its own.
#include "arguments.hpp"
#include "command.hpp"
#include "output.hpp"
#include "report_file.hpp"

#include <nsightkit/detail/fmt_format.hpp>
#include <nsightkit/detail/mpi/merge.hpp>
#include <nsightkit/detail/mpi/merge_json.hpp>
#include <nsightkit/detail/mpi/merge_text.hpp>
#include <nsightkit/detail/mpi/trace.hpp>
#include <nsightkit/detail/report/output/text_sink.hpp>
#include <nsightkit/detail/text.hpp>
#include <nsightkit/mpi_types.hpp>

#include <nlohmann/json.hpp>

#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace nsightkit_command {
namespace {

namespace nsk = nsightkit;
namespace mpi = nsightkit::detail::mpi;
using Json = nlohmann::ordered_json;

constexpr char command[] = "nsightkit merge";

constexpr char help[] =
    R"(usage: nsightkit merge FILE... [options]

Merges the per-rank report files of one run written without MPI into one view: under a launcher
each rank writes its own summary (NSIGHTKIT_REPORT=json=s.json gives s.rank0.json, s.rank1.json,
...) and trace (trace=t.json gives t.rank0.json, ...). The merge is the one the MPI component
(nsightkit::mpi) makes on rank 0, with the same results:

  * a table: per range path the ranks' totals as min / median / max, the slowest rank and how far
    it exceeds the other ranks, then the stragglers; with --gpu on GPU time: CUPTI's busy time of
    the work a path launched where a rank has it (a collective's kernels on NCCL's stream too),
    else the rank's CUDA-event spans;
  * the same statistics with every rank's numbers as JSON (--json) and CSV (--csv);
  * one Chrome trace with a process per rank, on one time line (--trace).

FILE: summaries and traces, told apart by their content (gzip-compressed or not); a directory
stands for the *.json and *.json.gz files directly in it (other files there are skipped with a
note); a quoted wildcard pattern is expanded here.

options:
  -o, --output PATH      the table: a file, or - for standard output (the default)
  --json PATH            the merged statistics with every rank's numbers as JSON
                         ("nsightkit-merged-report", version 1)
  --csv PATH             the same as CSV: a row per path, a column per rank
  --trace PATH           one Chrome trace with a process per rank (needs the ranks' traces)
  --sort ORDER           the table's order: tree (the default; siblings by median total), total
                         (largest median first), excess (largest excess of the slowest rank first)
  --gpu                  the table and the straggler rule on GPU time (the source column says
                         which source each row's numbers come from)
  --top N                only the N paths with the largest median total
  --per-rank             a column with each rank's total
  --min-excess PCT       straggler: excess over the other ranks' median, in percent (default 10)
  --min-excess-ms MS     straggler: excess in milliseconds (default 1)
  --min-share PCT        straggler: judge only paths whose median total is at least this share
                         of the median run time, in percent (default 5)
  --straggler-paths N    flagged paths listed per rank (default 8, largest excess first, shown in
                         tree order)
  --collective GLOB      a path component pattern that marks a collective (case-insensitive;
                         repeatable; replaces the default *allreduce* *all_reduce* *all-reduce*
                         *allgather* *all_gather* *reduce_scatter* *reducescatter* *alltoall*
                         *broadcast* *barrier* nccl*)
  --no-collectives       judge collectives like any other path
  --assign-ranks         number files without a rank in the order given (one rank per process
                         id) instead of stopping with an error
  --no-align             do not shift the ranks' traces onto one time line (ranks on several
                         hosts: steady clocks are shared only within one host)
  -h, --help             this text

straggler rule:
  On a path holding at least --min-share % of the median run time, rank R is flagged when its
  total exceeds the median of the other ranks' totals by more than --min-excess % AND by more
  than --min-excess-ms ms. With two ranks "the other ranks" is the other rank. Paths with a
  component matching a --collective pattern are not judged (the rank that arrives last waits
  least there): the straggler section lists them, and on CPU time their time is subtracted from
  the paths holding them first.

examples:
  nsightkit merge out/                                    # the table of every rank file in out/
  nsightkit merge --trace merged-trace.json --json merged.json out/s.rank*.json out/t.rank*.json
  nsightkit merge --gpu --per-rank --sort excess out/

Exit status: 0 (warnings allowed); 2 for a bad option or input (one message naming the file and
the problem); 1 for an internal error.
)";

// Steady-clock origins further apart than this are unlikely to come from one host's run.
constexpr std::int64_t align_suspicious_ns = 300'000'000'000;

/// Warnings and notes: printed as they come, kept for the merged JSON.
struct Messages {
  std::vector<mpi::Message> items;
  void warn(std::string text) { add("warning", std::move(text)); }
  void note(std::string text) { add("note", std::move(text)); }

 private:
  void add(char const* level, std::string text) {
    std::fprintf(stderr, "%s: %s: %s\n", command, level, text.c_str());
    items.push_back({level, std::move(text)});
  }
};

/// One input file: a summary or a trace of one rank.
struct Input {
  std::string file;
  std::optional<int> rank;
  std::optional<long> pid;
  bool assigned{false};
  SavedSummary summary;  // summaries
  SavedTrace trace;      // traces
};

std::string printable(std::string const& s) { return nsk::detail::printable(s); }

bool is_dir(std::string const& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool exists(std::string const& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

std::string real_path(std::string const& p) {
  char* r = ::realpath(p.c_str(), nullptr);
  if (r == nullptr) return p;
  std::string out{r};
  std::free(r);
  return out;
}

bool ends_with(std::string const& s, char const* tail) {
  std::string const t{tail};
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

/// The files the arguments name: (path, named on its own). Files named twice are read once.
std::vector<std::pair<std::string, bool>> expand_inputs(std::vector<std::string> const& args) {
  std::vector<std::pair<std::string, bool>> out;
  std::set<std::string> seen;
  auto add = [&](std::string const& p, bool explicit_file) {
    if (seen.insert(real_path(p)).second) out.emplace_back(p, explicit_file);
  };
  auto matches = [](std::string const& pattern) {
    std::vector<std::string> found;
    ::glob_t g{};
    if (::glob(pattern.c_str(), 0, nullptr, &g) == 0) {
      for (std::size_t i = 0; i < g.gl_pathc; ++i) found.emplace_back(g.gl_pathv[i]);
    }
    ::globfree(&g);
    std::sort(found.begin(), found.end());
    return found;
  };
  for (std::string const& arg : args) {
    if (is_dir(arg)) {
      std::string const dir = ends_with(arg, "/") ? arg : arg + "/";
      for (std::string const& p : matches(dir + "*")) {
        if ((ends_with(p, ".json") || ends_with(p, ".json.gz")) && !is_dir(p)) add(p, false);
      }
    } else if (exists(arg)) {
      add(arg, true);
    } else if (arg.find_first_of("*?[") != std::string::npos) {
      std::vector<std::string> const found = matches(arg);
      if (found.empty()) throw InputError(arg + ": the pattern matches no file");
      for (std::string const& m : found) {
        if (is_dir(m))
          throw InputError(m + ": a directory matched by '" + arg +
                           "'; name directories on their own");
        add(m, true);
      }
    } else {
      throw InputError(arg + ": no such file or directory");
    }
  }
  return out;
}

/// Checks that every file has a rank and no rank is claimed twice; with `assign`, files without
/// a rank get the smallest free ranks, one per process (a summary and a trace of one OS process
/// are one rank), in the order given.
void assign_ranks(std::vector<Input>& summaries, std::vector<Input>& traces, bool assign,
                  Messages& msgs) {
  std::vector<Input*> all;
  for (Input& f : summaries) all.push_back(&f);
  for (Input& f : traces) all.push_back(&f);
  std::set<int> used;
  for (Input* f : all) {
    if (f->rank) used.insert(*f->rank);
  }
  std::map<std::string, int> by_process;
  int next = 0;
  for (Input* f : all) {
    if (f->rank) continue;
    if (!assign) {
      throw InputError(f->file +
                       ": no rank in the file (the process had none of OMPI_COMM_WORLD_RANK, "
                       "PMI_RANK, SLURM_PROCID, RANK, LOCAL_RANK set); set one per process, or "
                       "pass --assign-ranks to number such files in the order given");
    }
    std::string const key = f->pid ? "pid " + std::to_string(*f->pid) : "file " + f->file;
    auto it = by_process.find(key);
    if (it == by_process.end()) {
      while (used.count(next) != 0) ++next;
      used.insert(next);
      it = by_process.emplace(key, next).first;
    }
    f->rank = it->second;
    f->assigned = true;
    msgs.warn(fmt::format("{}: no rank in the file; assigned rank {} (--assign-ranks, pid {})",
                          f->file, *f->rank, f->pid ? std::to_string(*f->pid) : "unknown"));
  }
  for (auto* files : {&summaries, &traces}) {
    std::map<int, Input const*> claimed;
    for (Input const& f : *files) {
      auto const [it, fresh] = claimed.emplace(*f.rank, &f);
      if (!fresh) {
        throw InputError(fmt::format(
            "rank {} appears twice among the {}: {} and {} (files of two runs in one place? pass "
            "the files of one run)",
            *f.rank, files == &summaries ? "summaries" : "traces", it->second->file, f.file));
      }
    }
    std::stable_sort(files->begin(), files->end(),
                     [](Input const& a, Input const& b) { return *a.rank < *b.rank; });
  }
}

std::string join(std::vector<int> const& v) { return mpi::join_ranks(v); }

/// Warnings and notes for inputs that merge but may mislead.
void check_consistency(std::vector<Input> const& summaries, std::vector<Input> const& traces,
                       std::vector<mpi::RankReport> const& reports, Messages& msgs) {
  std::map<int, Input const*> by_rank;
  for (Input const& s : summaries) by_rank[*s.rank] = &s;
  std::set<int> trace_ranks;
  for (Input const& t : traces) {
    trace_ranks.insert(*t.rank);
    auto const it = by_rank.find(*t.rank);
    if (it != by_rank.end() && t.pid && *t.pid != it->second->summary.snapshot.pid) {
      msgs.warn(fmt::format(
          "rank {}: the summary {} (pid {}) and the trace {} (pid {}) come from different "
          "processes: files of two runs?",
          *t.rank, it->second->file, it->second->summary.snapshot.pid, t.file, *t.pid));
    }
  }
  if (!summaries.empty() && !traces.empty()) {
    std::vector<int> only_s, only_t;
    for (auto const& [r, s] : by_rank) {
      if (trace_ranks.count(r) == 0) only_s.push_back(r);
    }
    for (int r : trace_ranks) {
      if (by_rank.count(r) == 0) only_t.push_back(r);
    }
    if (!only_s.empty()) msgs.note("no trace for rank(s) " + join(only_s));
    if (!only_t.empty()) msgs.note("no summary for rank(s) " + join(only_t));
  }
  std::set<int> ranks = trace_ranks;
  for (auto const& [r, s] : by_rank) ranks.insert(r);
  std::vector<int> gaps;
  if (!ranks.empty()) {
    for (int r = 0; r < *ranks.rbegin(); ++r) {
      if (ranks.count(r) == 0) gaps.push_back(r);
    }
  }
  if (!gaps.empty()) {
    msgs.warn(fmt::format(
        "no file for rank(s) {} (ranks present: {}): did a rank fail or write elsewhere?",
        mpi::short_list(gaps), mpi::short_list(std::vector<int>(ranks.begin(), ranks.end()))));
  }
  std::map<std::string, std::set<int>> versions;
  for (Input const& s : summaries) versions[s.summary.nsightkit_version].insert(*s.rank);
  for (Input const& t : traces) versions[t.trace.nsightkit_version].insert(*t.rank);
  if (versions.size() > 1) {
    std::string listing;
    for (auto const& [v, rs] : versions) {
      listing += fmt::format("{}{} on rank(s) {}", listing.empty() ? "" : "; ", v.empty() ? "?" : v,
                             join(std::vector<int>(rs.begin(), rs.end())));
    }
    msgs.warn("the files come from different nsightkit versions (" + listing + ")");
  }
  std::vector<int> captured;
  for (Input const& s : summaries) {
    if (s.summary.snapshot.captured_only) captured.push_back(*s.rank);
  }
  if (!captured.empty() && captured.size() != summaries.size()) {
    msgs.warn("some ranks counted only captured steps (captured_only on rank(s) " + join(captured) +
              ") and others everything: their totals are not comparable");
  }
  std::vector<mpi::RankReport const*> present;
  for (mpi::RankReport const& r : reports) present.push_back(&r);
  std::string mixed = mpi::mixed_sources_warning(present);
  if (!mixed.empty()) msgs.warn(std::move(mixed));
  for (mpi::RankReport const& r : reports) {
    if (!r.gpu_error.empty())
      msgs.note(fmt::format("rank {}: GPU timing stopped: {}", r.rank, r.gpu_error));
  }
  for (Input const& t : traces) {
    if (t.trace.events_dropped != 0) {
      msgs.note(
          fmt::format("rank {}: the trace dropped {} events (trace-events=N raises the limit)",
                      *t.rank, t.trace.events_dropped));
    }
  }
}

/// Per trace, the shift in ns that puts it on the time line of the earliest one, or nothing.
/// Only steady-clock origins compare: steady_clock is CLOCK_MONOTONIC, one per host.
std::optional<std::vector<std::int64_t>> alignment(std::vector<Input> const& traces, bool want,
                                                   Messages& msgs) {
  if (!want) {
    msgs.note("--no-align: every rank's trace starts at its own enable()");
    return std::nullopt;
  }
  for (Input const& t : traces) {
    if (t.trace.clock == "steady" && t.trace.origin_ns) continue;
    std::string const why =
        !t.trace.origin_ns
            ? "no clock/time_origin_ns (written by an nsightkit older than 0.1.0's multi-rank "
              "support)"
            : "clock '" + printable(t.trace.clock) + "' is not the shared steady clock";
    msgs.note("traces not aligned: " + t.file + " has " + why +
              "; every rank's time starts at its own enable()");
    return std::nullopt;
  }
  std::int64_t base = *traces.front().trace.origin_ns;
  for (Input const& t : traces) base = std::min(base, *t.trace.origin_ns);
  std::vector<std::int64_t> shifts;
  std::int64_t most = 0;
  for (Input const& t : traces) {
    shifts.push_back(*t.trace.origin_ns - base);
    most = std::max(most, shifts.back());
  }
  if (most > align_suspicious_ns) {
    msgs.warn(fmt::format(
        "the ranks enabled the report up to {:.0f} s apart: steady clocks are only shared within "
        "one host; for ranks on several hosts use --no-align",
        static_cast<double>(most) / 1e9));
  }
  return shifts;
}

/// The merged trace of `traces` (sorted by rank) through trace.hpp's rank_fragment.
std::string merged_trace(std::vector<Input> const& traces,
                         std::optional<std::vector<std::int64_t>> const& shifts) {
  std::vector<std::string> fragments;
  std::uint64_t ids = 0;
  Json sources = Json::array();
  std::vector<int> ranks;
  std::int64_t base = 0;
  for (std::size_t i = 0; i < traces.size(); ++i) {
    Input const& t = traces[i];
    bool named = false;
    std::string events;
    for (TraceEvent const& e : t.trace.events) {
      if (e.meta == TraceMeta::process_name) named = true;
      // Each rank gets a sort index of its own, and an assigned rank a name that says so.
      if (e.meta == TraceMeta::process_sort_index ||
          (t.assigned && e.meta == TraceMeta::process_name))
        continue;
      events += e.json;
      events += '\n';
    }
    std::string name;
    if (!named || t.assigned) {
      name = fmt::format("nsightkit rank {} (pid {}){}", *t.rank,
                         t.pid ? std::to_string(*t.pid) : "unknown",
                         t.assigned ? " [rank assigned by merge]" : "");
    }
    std::int64_t const shift = shifts ? (*shifts)[i] : 0;
    if (shifts) base = *t.trace.origin_ns - shift;
    fragments.push_back(mpi::rank_fragment(events, *t.rank, shift, ids, name));
    ids += mpi::count_async_ids(events);
    ranks.push_back(*t.rank);
    Json src = {{"rank", *t.rank}, {"file", t.file}};
    src["pid"] = t.pid ? Json(*t.pid) : Json(nullptr);
    src["producer"] = "nsightkit " + t.trace.nsightkit_version;
    src["time_origin_ns"] = t.trace.origin_ns ? Json(*t.trace.origin_ns) : Json(nullptr);
    src["shift_ns"] = shifts ? Json(shift) : Json(nullptr);
    src["events_dropped"] = t.trace.events_dropped;
    src["rank_assigned"] = t.assigned;
    sources.push_back(std::move(src));
  }
  Json other = {{"producer", fmt::format("nsightkit merge (nsightkit {})", nsk::version_string)},
                {"ranks", ranks},
                {"aligned", shifts.has_value()}};
  other["clock"] = shifts ? Json("steady") : Json(nullptr);
  other["time_origin_ns"] = shifts ? Json(base) : Json(nullptr);
  other["sources"] = std::move(sources);
  nsk::detail::report::TextSink sink;
  mpi::merged_trace(sink, fragments, other.dump(-1, ' ', false, Json::error_handler_t::replace));
  return std::move(sink.buffer());
}

int merge(Arguments const& a) {
  if (a.positionals().empty()) throw UsageError("give the per-rank files (or their directory)");
  nsk::mpi::MergeOptions m;
  m.min_excess_pct = a.number("--min-excess", m.min_excess_pct);
  m.min_excess_ms = a.number("--min-excess-ms", m.min_excess_ms);
  m.min_share_pct = a.number("--min-share", m.min_share_pct);
  m.straggler_paths = static_cast<std::size_t>(
      a.count("--straggler-paths", m.straggler_paths, 1, std::size_t{1} << 30));
  if (a.has("--collective")) m.collectives = a.values("--collective");
  if (a.has("--no-collectives")) m.collectives.clear();
  mpi::TextOptions o = mpi::text_options(m);
  o.basis = a.has("--gpu") ? mpi::Basis::gpu : mpi::Basis::cpu;
  std::string const order = a.choice("--sort", {"tree", "total", "excess"}, "tree");
  o.order = order == "total"    ? mpi::Order::total
            : order == "excess" ? mpi::Order::excess
                                : mpi::Order::tree;
  o.top = static_cast<std::size_t>(a.count("--top", 0, 1, std::size_t{1} << 30));
  o.per_rank = a.has("--per-rank");
  std::string const table_out = a.value("--output", "-");
  std::string const json_out = a.value("--json");
  std::string const csv_out = a.value("--csv");
  std::string const trace_out = a.value("--trace");

  Messages msgs;
  std::vector<Input> summaries, traces;
  for (auto const& [path, explicit_file] : expand_inputs(a.positionals())) {
    ReportFile f = read_report_file(path);
    if (f.kind == FileKind::summary) {
      Input in;
      in.file = path;
      in.rank = f.summary.snapshot.rank;
      in.pid = f.summary.snapshot.pid;
      in.summary = std::move(f.summary);
      summaries.push_back(std::move(in));
    } else if (f.kind == FileKind::trace) {
      Input in;
      in.file = path;
      in.rank = f.trace.rank;
      in.pid = f.trace.pid;
      in.trace = std::move(f.trace);
      traces.push_back(std::move(in));
    } else if (f.kind == FileKind::merged) {
      if (explicit_file)
        throw InputError(path +
                         ": this is a merged file (written by nsightkit merge); merge the "
                         "per-rank files instead");
      msgs.note(path + ": a merged file (written by nsightkit merge), skipped");
    } else if (explicit_file) {
      throw InputError(path +
                       ": not an nsightkit report file: expected a summary (\"format\": "
                       "\"nsightkit-report\", from NSIGHTKIT_REPORT=json=...) or a trace "
                       "(\"traceEvents\" with otherData.producer \"nsightkit ...\", from "
                       "trace=...)");
    } else {
      msgs.note(path + ": not an nsightkit summary or trace, skipped");
    }
  }
  if (summaries.empty() && traces.empty()) {
    bool const dir = std::any_of(a.positionals().begin(), a.positionals().end(), is_dir);
    std::string names;
    for (std::string const& p : a.positionals()) names += (names.empty() ? "" : " ") + p;
    throw InputError("no nsightkit summary or trace among the inputs: " + names +
                     (dir ? "; a directory is read one level deep" : ""));
  }
  assign_ranks(summaries, traces, a.has("--assign-ranks"), msgs);

  // Each rank's report, as the rank would hand it over itself.
  std::vector<mpi::RankReport> reports;
  for (Input const& s : summaries) {
    mpi::RankReport r = mpi::rank_report(s.summary.snapshot, *s.rank);
    r.rank_assigned = s.assigned;
    r.version = s.summary.nsightkit_version;
    r.summary_file = s.file;
    reports.push_back(std::move(r));
  }
  check_consistency(summaries, traces, reports, msgs);
  if (!trace_out.empty() && traces.empty())
    throw InputError(
        "--trace: no trace among the inputs (write them with "
        "NSIGHTKIT_REPORT=trace=PATH)");
  if (summaries.empty() && trace_out.empty())
    throw InputError(
        "only traces among the inputs and no --trace: nothing to do (the table "
        "needs the summaries, NSIGHTKIT_REPORT=json=PATH)");
  if (summaries.empty() && (!json_out.empty() || !csv_out.empty()))
    throw InputError("--json/--csv need summaries (NSIGHTKIT_REPORT=json=PATH) among the inputs");
  // Aligned first, so that its notes are among the merged JSON's messages too.
  std::optional<std::vector<std::int64_t>> shifts;
  if (!trace_out.empty()) shifts = alignment(traces, !a.has("--no-align"), msgs);

  std::vector<std::string> wrote;
  if (!summaries.empty()) {
    mpi::MergedView v;
    for (mpi::RankReport const& r : reports) v.ranks.push_back(&r);
    mpi::merge_rows(v);
    if (o.basis == mpi::Basis::gpu &&
        std::none_of(v.tree.begin(), v.tree.end(), [](mpi::Merged const* row) {
          return !row->per_rank(mpi::Basis::gpu).empty();
        })) {
      throw InputError(
          "--gpu: no rank has GPU times (CUPTI's attributed work with the nsightkit::cupti "
          "component, or CUDA-event spans of ranges inside a CurrentStream/GpuRange)");
    }
    write_file(table_out, mpi::format_table(v, o));
    if (table_out != "-") wrote.push_back(table_out + " (table)");
    if (!json_out.empty()) {
      nsk::detail::report::TextSink sink;
      mpi::merged_json(sink, v, o, msgs.items,
                       fmt::format("nsightkit merge (nsightkit {})", nsk::version_string));
      write_file(json_out, sink.buffer());
      wrote.push_back(json_out + " (merged summary)");
    }
    if (!csv_out.empty()) {
      nsk::detail::report::TextSink sink;
      mpi::merged_csv(sink, v);
      write_file(csv_out, sink.buffer());
      wrote.push_back(csv_out + " (CSV)");
    }
  } else {
    msgs.note("no summaries among the inputs: no table (NSIGHTKIT_REPORT=json=PATH writes them)");
  }
  if (!trace_out.empty()) {
    write_file(trace_out, merged_trace(traces, shifts));
    std::vector<int> ranks;
    for (Input const& t : traces) ranks.push_back(*t.rank);
    wrote.push_back(fmt::format("{} (trace of rank(s) {}, {})", trace_out, join(ranks),
                                shifts ? "aligned" : "not aligned"));
  }
  if (!wrote.empty()) {
    std::string line;
    for (std::string const& w : wrote) line += (line.empty() ? "" : ", ") + w;
    std::fprintf(stderr, "%s: wrote %s\n", command, line.c_str());
  }
  return 0;
}

}  // namespace

int run_merge(Invocation const& call) {
  return run_subcommand(command, help, call.args,
                        {{"--output", "-o", true, false},
                         {"--json", nullptr, true, false},
                         {"--csv", nullptr, true, false},
                         {"--trace", nullptr, true, false},
                         {"--sort", nullptr, true, false},
                         {"--gpu", nullptr, false, false},
                         {"--top", nullptr, true, false},
                         {"--per-rank", nullptr, false, false},
                         {"--min-excess", nullptr, true, false},
                         {"--min-excess-ms", nullptr, true, false},
                         {"--min-share", nullptr, true, false},
                         {"--straggler-paths", nullptr, true, false},
                         {"--collective", nullptr, true, true},
                         {"--no-collectives", nullptr, false, false},
                         {"--assign-ranks", nullptr, false, false},
                         {"--no-align", nullptr, false, false}},
                        merge);
}

}  // namespace nsightkit_command
