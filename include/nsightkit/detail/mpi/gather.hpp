// Internal: Report::write() and MPI_Finalize on every rank of the communicator — each rank writes
// its own files (summary.rankN.json, …) from one snapshot, sends what the merge needs of that
// snapshot (and its trace, shifted onto rank 0's clock) to rank 0, and rank 0 writes the merged
// table, summary, CSV and trace (".merged" in their names; the table where table= says).
//
// The steps, every rank in the same order (all waits bounded, runtime.hpp):
//   1. rank 0 broadcasts whether it has a report and wants a merged trace;
//   2. with a trace: clock offsets to rank 0 (ping-pong) and each rank's trace text;
//   3. MPI_Igather of the sizes, MPI_Igatherv of the serialized RankReports (wire.hpp);
//   4. with a trace: rank 0 scatters each rank's shift and start/end id base, each rank rewrites
//      its events (trace.hpp) and sends them, rank 0 receives them in rank order;
//   5. rank 0 merges (merge.hpp) and writes (merge_text.hpp, merge_json.hpp).
// A rank without a report still takes part (it sends "no report"), so ranks that enable the
// report differently never leave a collective waiting.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/fmt_format.hpp>
#include <nsightkit/detail/mpi/merge.hpp>
#include <nsightkit/detail/mpi/merge_json.hpp>
#include <nsightkit/detail/mpi/merge_text.hpp>
#include <nsightkit/detail/mpi/runtime.hpp>
#include <nsightkit/detail/mpi/trace.hpp>
#include <nsightkit/detail/mpi/wire.hpp>
#include <nsightkit/detail/process.hpp>
#include <nsightkit/detail/report/lifecycle.hpp>
#include <nsightkit/detail/report/options.hpp>
#include <nsightkit/detail/report/output/file.hpp>
#include <nsightkit/detail/report/state.hpp>
#include <nsightkit/detail/report/trace/stream.hpp>

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::mpi {

/// The name of a merged output: "{rank}" becomes "merged", else ".merged" goes before the
/// extension ("out/summary.json" gives "out/summary.merged.json"), as ".rankN" does per rank.
inline std::string merged_output_path(std::string_view path) {
  std::string out;
  bool had_rank = false;
  for (std::size_t i = 0; i < path.size();) {
    if (path.compare(i, 6, "{rank}") == 0) {
      out += "merged";
      had_rank = true;
      i += 6;
    } else if (path.compare(i, 5, "{pid}") == 0) {
      out += std::to_string(process_id());
      i += 5;
    } else {
      out += path[i++];
    }
  }
  if (!had_rank) report::insert_before_extension(out, ".merged");
  return out;
}

/// Sends `bytes` to rank 0 (a size, then pieces of at most 1 GiB: MPI counts are int).
inline void send_to_root(std::string const& bytes, int tag, char const* what) {
  Runtime const& rt = runtime();
  auto const size = static_cast<std::int64_t>(bytes.size());
  MPI_Request req;
  MPI_Isend(&size, 1, MPI_INT64_T, 0, tag, rt.comm, &req);
  wait_or_abort(req, what);
  constexpr std::size_t piece = std::size_t{1} << 30;
  for (std::size_t at = 0; at < bytes.size(); at += piece) {
    int const n = static_cast<int>(std::min(piece, bytes.size() - at));
    MPI_Isend(bytes.data() + at, n, MPI_CHAR, 0, tag + 1, rt.comm, &req);
    wait_or_abort(req, what);
  }
}

/// Rank 0: what rank `from` sends with send_to_root().
inline std::string receive_from(int from, int tag, char const* what) {
  Runtime const& rt = runtime();
  std::int64_t size = 0;
  MPI_Request req;
  MPI_Irecv(&size, 1, MPI_INT64_T, from, tag, rt.comm, &req);
  wait_or_abort(req, what);
  std::string bytes(static_cast<std::size_t>(size), '\0');
  constexpr std::size_t piece = std::size_t{1} << 30;
  for (std::size_t at = 0; at < bytes.size(); at += piece) {
    int const n = static_cast<int>(std::min(piece, bytes.size() - at));
    MPI_Irecv(&bytes[at], n, MPI_CHAR, from, tag + 1, rt.comm, &req);
    wait_or_abort(req, what);
  }
  return bytes;
}

/// Rank 0: every rank's RankReport, in rank order (a rank whose bytes cannot be read is absent
/// and named in `messages`); the others: empty.
inline std::vector<RankReport> gather_reports(RankReport const& mine,
                                              std::vector<Message>& messages) {
  Runtime const& rt = runtime();
  std::string const bytes = encode(mine);
  if (bytes.size() > static_cast<std::size_t>(INT_MAX)) {
    abort_job(fmt::format("nsightkit mpi: {}: its report takes {} bytes, more than one MPI message "
                          "holds; ending the job",
                          who(), bytes.size()),
              1);
  }
  int const n = static_cast<int>(bytes.size());
  std::vector<int> sizes(rt.rank == 0 ? static_cast<std::size_t>(rt.size) : 0);
  MPI_Request req;
  MPI_Igather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, rt.comm, &req);
  wait_or_abort(req, "gathering the sizes of the ranks' reports");
  std::vector<int> displs(sizes.size());
  std::int64_t total = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    displs[i] = static_cast<int>(total);
    total += sizes[i];
  }
  if (total > INT_MAX) {
    abort_job(fmt::format("nsightkit mpi: {}: the ranks' reports take {} bytes together, more "
                          "than one MPI gather holds; ending the job",
                          who(), total),
              1);
  }
  std::string all(static_cast<std::size_t>(total), '\0');
  MPI_Igatherv(bytes.data(), n, MPI_CHAR, all.data(), sizes.data(), displs.data(), MPI_CHAR, 0,
               rt.comm, &req);
  wait_or_abort(req, "gathering the ranks' reports");
  std::vector<RankReport> out;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    RankReport r;
    if (!decode(all.data() + displs[i], static_cast<std::size_t>(sizes[i]), r) ||
        r.rank != static_cast<int>(i)) {
      messages.push_back(
          {"warning", fmt::format("rank {} sent a report that could not be read; left out", i)});
      r = RankReport{};
      r.rank = static_cast<int>(i);
    }
    out.push_back(std::move(r));
  }
  return out;
}

/// Where rank 0 puts each rank's trace: its shift onto the merged time line and its first
/// start/end id; what otherData says of it.
struct Alignment {
  bool aligned{false};
  std::int64_t base{0};  ///< the merged trace's time origin, on rank 0's steady clock
  std::vector<std::int64_t> shift;
  std::vector<std::int64_t> used_offset;
  std::vector<std::uint64_t> id_base;
};

inline Alignment align(std::vector<RankReport> const& all, std::vector<ClockOffset> const& offsets,
                       std::vector<Message>& messages) {
  Runtime const& rt = runtime();
  Alignment a;
  std::size_t const n = all.size();
  a.shift.assign(n, 0);
  a.used_offset.assign(n, 0);
  a.id_base.assign(n, 0);
  std::uint64_t ids = 0;
  bool steady = true;
  bool first = true;
  for (std::size_t r = 0; r < n; ++r) {
    if (!all[r].has_trace) continue;
    a.id_base[r] = ids;
    ids += all[r].async_ids;
    if (!all[r].steady_clock && steady) {
      steady = false;
      messages.push_back({"note", fmt::format("traces not aligned: rank {} records with a custom "
                                              "clock (ReportOptions::clock), not the steady "
                                              "clock; every rank's time starts at its own enable()",
                                              r)});
    }
    bool const same_host = rt.options.same_host_clocks && all[r].node == all[0].node;
    a.used_offset[r] = same_host || r >= offsets.size() ? 0 : offsets[r].offset_ns;
    std::int64_t const origin = all[r].origin_ns - a.used_offset[r];  // on rank 0's clock
    if (first || origin < a.base) a.base = origin;
    first = false;
  }
  a.aligned = steady && !first;
  for (std::size_t r = 0; r < n; ++r) {
    if (all[r].has_trace && a.aligned) a.shift[r] = all[r].origin_ns - a.used_offset[r] - a.base;
  }
  return a;
}

/// The merged trace's otherData.
inline std::string trace_other_data(std::vector<RankReport> const& all, Alignment const& a,
                                    std::vector<ClockOffset> const& offsets) {
  Runtime const& rt = runtime();
  std::string out = "{\"producer\":";
  json_string(out, fmt::format("nsightkit merge (in process: nsightkit/mpi.hpp, nsightkit {})",
                               version_string));
  out += ",\"ranks\":[";
  bool first = true;
  for (RankReport const& r : all) {
    if (!r.has_trace) continue;
    out += (first ? "" : ",") + std::to_string(r.rank);
    first = false;
  }
  fmt::format_to(std::back_inserter(out),
                 "],\"aligned\":{},\"clock\":{},\"time_origin_ns\":{},\"clock_alignment\":",
                 a.aligned ? "true" : "false", a.aligned ? "\"steady\"" : "null",
                 a.aligned ? std::to_string(a.base) : std::string{"null"});
  json_string(out, rt.options.same_host_clocks
                       ? "rank 0's steady clock; ranks on its host share it, other hosts' offsets "
                         "measured over MPI"
                       : "rank 0's steady clock; every rank's offset measured over MPI");
  out += ",\"sources\":[";
  first = true;
  for (std::size_t i = 0; i < all.size(); ++i) {
    RankReport const& r = all[i];
    if (!r.has_trace) continue;
    out += first ? "\n {\"rank\":" : ",\n {\"rank\":";
    first = false;
    out += std::to_string(r.rank);
    out += ",\"file\":";
    if (r.trace_file.empty()) {
      out += "null";
    } else {
      json_string(out, r.trace_file);
    }
    fmt::format_to(std::back_inserter(out), ",\"pid\":{},\"producer\":", r.pid);
    json_string(out, "nsightkit " + r.version);
    ClockOffset const measured = i < offsets.size() ? offsets[i] : ClockOffset{};
    fmt::format_to(std::back_inserter(out),
                   ",\"time_origin_ns\":{},\"shift_ns\":{},\"events_dropped\":{},"
                   "\"rank_assigned\":false,\"host\":",
                   r.origin_ns, a.aligned ? std::to_string(a.shift[i]) : std::string{"null"},
                   r.events_dropped);
    json_string(out, r.host);
    fmt::format_to(std::back_inserter(out),
                   ",\"same_host_as_rank0\":{},\"clock_offset_ns\":{},\"measured_offset_ns\":{},"
                   "\"offset_uncertainty_ns\":{}}}",
                   r.node == all[0].node ? "true" : "false", a.used_offset[i], measured.offset_ns,
                   measured.uncertainty_ns);
  }
  out += "]}";
  return out;
}

/// The warnings and notes of the merge that apply to one MPI job (`nsightkit merge` has more: its
/// files may come from different runs).
inline void consistency_messages(std::vector<RankReport> const& all, bool trace,
                                 std::vector<Message>& messages) {
  std::string absent, captured, no_trace;
  std::vector<std::string> versions;
  bool mixed_captured = false;
  for (RankReport const& r : all) {
    if (!r.present) {
      absent += (absent.empty() ? "" : ", ") + std::to_string(r.rank);
      continue;
    }
    if (r.captured_only) captured += (captured.empty() ? "" : ", ") + std::to_string(r.rank);
    if (r.captured_only != all[0].captured_only) mixed_captured = true;
    if (std::find(versions.begin(), versions.end(), r.version) == versions.end())
      versions.push_back(r.version);
    if (trace && !r.has_trace) no_trace += (no_trace.empty() ? "" : ", ") + std::to_string(r.rank);
  }
  if (!absent.empty()) {
    messages.push_back({"warning", fmt::format("no report from rank(s) {}: they never enabled it "
                                               "(NSIGHTKIT_REPORT or Report::enable on every "
                                               "rank); the merge has the other ranks",
                                               absent)});
  }
  if (mixed_captured) {
    messages.push_back(
        {"warning", fmt::format("some ranks counted only captured steps (captured_only on rank(s) "
                                "{}) and others everything: their totals are not comparable",
                                captured)});
  }
  if (versions.size() > 1) {
    messages.push_back({"warning", "the ranks run different nsightkit versions"});
  }
  std::vector<RankReport const*> present;
  for (RankReport const& r : all) {
    if (r.present) present.push_back(&r);
  }
  std::string mixed = mixed_sources_warning(present);
  if (!mixed.empty()) messages.push_back({"warning", std::move(mixed)});
  if (!no_trace.empty()) messages.push_back({"note", "no trace for rank(s) " + no_trace});
  for (RankReport const& r : all) {
    if (r.present && !r.gpu_error.empty())
      messages.push_back(
          {"note", fmt::format("rank {}: GPU timing stopped: {}", r.rank, r.gpu_error)});
    if (r.has_trace && r.events_dropped != 0)
      messages.push_back(
          {"note", fmt::format("rank {}: the trace dropped {} events (trace-events=N raises the "
                               "limit)",
                               r.rank, r.events_dropped)});
  }
}

/// Rank 0: writes the merged outputs `o` asks for; false when one did not reach its place.
inline bool write_merged(ReportOptions const& o, std::vector<RankReport> const& all,
                         std::vector<std::string> const& fragments, Alignment const& a,
                         std::vector<ClockOffset> const& offsets, std::vector<Message>& messages) {
  Runtime const& rt = runtime();
  MergedView v;
  for (RankReport const& r : all) {
    if (r.present) v.ranks.push_back(&r);
  }
  merge_rows(v);
  TextOptions const to = text_options(rt.options.merge);
  for (Message const& m : messages) {
    std::fprintf(stderr, "nsightkit mpi: %s: %s\n", m.level, m.text.c_str());
  }
  bool ok = true;
  std::vector<std::string> wrote;
  std::string done;
  auto file = [&](std::string const& asked, char const* what, char const* stem,
                  char const* extension, auto&& produce) {
    done.clear();
    std::string const path = merged_output_path(asked);
    if (!report::write_output(path, what, stem, extension, produce, done)) ok = false;
    if (!done.empty()) wrote.push_back(done);
  };
  if (!v.ranks.empty()) {
    if (o.table == "stdout" || o.table == "stderr") {
      std::string const table = format_table(v, to);
      std::fflush(stdout);
      std::FILE* f = o.table == "stdout" ? stdout : stderr;
      std::fputs(table.c_str(), f);
      std::fflush(f);
    } else if (!o.table.empty()) {
      file(o.table, "merged table", "table.merged", ".txt",
           [&](report::TextSink& sink) { sink.buffer() += format_table(v, to); });
    }
    if (!o.json.empty()) {
      std::string const producer = fmt::format(
          "nsightkit merge (in process: nsightkit/mpi.hpp, nsightkit {})", version_string);
      file(o.json, "merged summary JSON", "summary.merged", ".json",
           [&](report::TextSink& sink) { merged_json(sink, v, to, messages, producer); });
    }
    if (!o.csv.empty()) {
      file(o.csv, "merged CSV", "summary.merged", ".csv",
           [&](report::TextSink& sink) { merged_csv(sink, v); });
    }
  }
  if (!o.trace.empty() && !fragments.empty()) {
    std::string const other = trace_other_data(all, a, offsets);
    file(o.trace, "merged trace", "trace.merged", ".json",
         [&](report::TextSink& sink) { merged_trace(sink, fragments, other); });
  }
  if (!wrote.empty()) {
    std::string line = "nsightkit mpi: wrote";
    for (std::size_t i = 0; i < wrote.size(); ++i) line += (i == 0 ? " " : ", ") + wrote[i];
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  return ok;
}

/// Report::write() on every rank of the communicator (see the file comment). Collective.
inline bool gather_write() noexcept {
  Runtime& rt = runtime();
  NSIGHTKIT_DETAIL_TRY {
    report::State* s = report::state();
    bool has = false;
    if (s != nullptr) {
      std::lock_guard<std::mutex> lock{s->mutex};
      has = s->started;
    }
    std::optional<ReportSnapshot> snap;
    ReportOptions o;
    bool ok = true;
    if (has) {
      o = report::options();
      snap = report::advised_snapshot();
      ok = report::write_snapshot(*snap, false);
    }
    // 1. Rank 0 decides what is merged.
    std::int64_t plan[2] = {has ? 1 : 0, has && !o.trace.empty() ? 1 : 0};
    MPI_Request req;
    MPI_Ibcast(plan, 2, MPI_INT64_T, 0, rt.comm, &req);
    wait_or_abort(req, "starting the report's gather");
    bool const want_trace = plan[1] != 0;

    // 2. This rank's part.
    RankReport mine = snap ? rank_report(*snap, rt.rank) : RankReport{};
    mine.rank = rt.rank;
    mine.present = has;
    mine.version = version_string;
    mine.node = rt.node;
    mine.host = rt.host;
    if (has && !o.json.empty()) mine.summary_file = report::output_path_here(o.json);
    std::string trace_text;
    std::string_view events;
    if (want_trace && has && (!o.trace.empty() || o.record_trace)) {
      trace_text = report::trace_json();
      events = trace_events(trace_text);
      mine.has_trace = !events.empty();
      if (!o.trace.empty()) mine.trace_file = report::output_path_here(o.trace);
      mine.async_ids = count_async_ids(events);
      std::lock_guard<std::mutex> lock{s->mutex};
      mine.origin_ns = s->origin.load(std::memory_order_relaxed);
      mine.steady_clock = s->clock.load(std::memory_order_relaxed) == nullptr;
    }
    std::vector<ClockOffset> const offsets =
        want_trace ? measure_clock_offsets() : std::vector<ClockOffset>{};

    // 3. The reports to rank 0.
    std::vector<Message> messages;
    std::vector<RankReport> const all = gather_reports(mine, messages);

    // 4. The traces to rank 0, shifted onto one time line.
    Alignment a;
    std::vector<std::string> fragments;
    if (want_trace) {
      std::vector<std::int64_t> params;
      if (rt.rank == 0) {
        a = align(all, offsets, messages);
        for (std::size_t r = 0; r < all.size(); ++r) {
          params.push_back(a.shift[r]);
          params.push_back(static_cast<std::int64_t>(a.id_base[r]));
        }
      }
      std::int64_t my[2] = {0, 0};
      MPI_Iscatter(params.data(), 2, MPI_INT64_T, my, 2, MPI_INT64_T, 0, rt.comm, &req);
      wait_or_abort(req, "sending the ranks their trace shifts");
      constexpr int tag = 110;  // and 111 for the pieces (on nsightkit's own communicator)
      std::string fragment;
      if (mine.has_trace) {
        fragment = rank_fragment(events, rt.rank, my[0], static_cast<std::uint64_t>(my[1]));
        std::string().swap(trace_text);
      }
      if (rt.rank == 0) {
        for (RankReport const& r : all) {
          if (!r.has_trace) continue;
          fragments.push_back(r.rank == 0
                                  ? std::move(fragment)
                                  : receive_from(r.rank, tag, "receiving the ranks' traces"));
        }
      } else if (mine.has_trace) {
        send_to_root(fragment, tag, "sending this rank's trace to rank 0");
      }
    }

    // 5. Rank 0 writes the merged view.
    if (rt.rank == 0 && has) {
      consistency_messages(all, want_trace, messages);
      if (!write_merged(o, all, fragments, a, offsets, messages)) ok = false;
    }
    return ok;
  }
  NSIGHTKIT_DETAIL_CATCH(...) {
    // The other ranks are inside the gather: leaving it would make them wait out the timeout.
    abort_job("nsightkit mpi: out of memory while gathering the report; ending the job", 1);
  }
  return false;
}

/// Set as the report's write hook by nsightkit::mpi::enable().
inline bool write_hook(bool at_exit) noexcept {
  Runtime const& rt = runtime();
  if (!rt.enabled.load(std::memory_order_acquire) || rt.size == 1 || !mpi_active())
    return report::write_local();
  if (at_exit) {
    // Exiting while MPI still runs: an error path (exit() without MPI_Finalize). The other ranks
    // are not at a collective: write this rank's files only.
    std::fprintf(stderr,
                 "nsightkit mpi: rank %d exits without MPI_Finalize: its report is written on its "
                 "own, not merged\n",
                 rt.rank);
    return report::write_local();
  }
  return gather_write();
}

/// The report's part of MPI_Finalize (runtime.hpp's on_finalize_callback): a report that would
/// be written at exit is gathered and written now, merged, and the at-exit handler then has
/// nothing left to do. Every rank agrees first, so ranks whose reports differ never disagree on
/// whether the gather happens.
inline void finalize_report() noexcept {
  Runtime const& rt = runtime();
  if (rt.size > 1) {
    report::State* s = report::state();
    int want = 0;
    if (s != nullptr) {
      std::lock_guard<std::mutex> lock{s->mutex};
      want = s->started && s->options.at_exit && !s->exit_written.load() ? 1 : 0;
    }
    int any = 0;
    MPI_Request req;
    MPI_Iallreduce(&want, &any, 1, MPI_INT, MPI_MAX, rt.comm, &req);
    wait_or_abort(req, "agreeing on the report's gather in MPI_Finalize");
    if (any != 0) {
      gather_write();
      if (s != nullptr) s->exit_written.store(true);
    }
  }
  report::write_hook.store(nullptr, std::memory_order_release);
}

}  // namespace detail::mpi
NSIGHTKIT_DETAIL_END_NAMESPACE
