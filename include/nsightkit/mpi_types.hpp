/**
 * @file mpi_types.hpp
 * @brief The plain types of the MPI integration (nsightkit/mpi.hpp): its options and those of
 *        the merged report. Needs no MPI; include <nsightkit/mpi.hpp> to use the integration.
 */
#pragma once

#include <nsightkit/config.hpp>

#include <cstddef>
#include <string>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace mpi {

/**
 * @brief How rank 0 merges the ranks' reports: the straggler rule's thresholds and what counts as
 *        a collective. The defaults are those of `nsightkit merge`, so both give the same
 *        table for one run (docs/multi-gpu.md, "Stragglers").
 */
struct MergeOptions {
  /// A rank is flagged on a path when its total exceeds the median of the other ranks' totals by
  /// more than this share, in percent (`nsightkit merge --min-excess`) ...
  double min_excess_pct{10.0};
  /// ... and by more than this many milliseconds (--min-excess-ms).
  double min_excess_ms{1.0};
  /// Only paths whose median total holds at least this percentage of the median run time are
  /// judged (--min-share).
  double min_share_pct{5.0};
  /// Path components matching one of these glob patterns (case-insensitive) are collectives: not
  /// judged, their time subtracted from the paths holding them, and summed per rank in the table's
  /// "time in collectives" (--collective). Empty: no collectives (--no-collectives).
  std::vector<std::string> collectives{"*allreduce*",     "*all_reduce*", "*all-reduce*",
                                       "*allgather*",     "*all_gather*", "*reduce_scatter*",
                                       "*reducescatter*", "*alltoall*",   "*broadcast*",
                                       "*barrier*",       "nccl*"};
  /// Flagged paths listed per rank in the table (--straggler-paths).
  std::size_t straggler_paths{8};
};

/**
 * @brief Options of nsightkit::mpi::enable().
 *
 * @code
 * nsightkit::mpi::Options o;
 * o.timeout_s = 120;                  // give up on a silent rank after two minutes
 * o.merge.min_excess_pct = 25;        // a noisy machine: flag only large excesses
 * nsightkit::mpi::enable(MPI_COMM_WORLD, o);
 * @endcode
 */
struct Options {
  /// The longest wait for the other ranks in nsightkit's own collectives (the report's gather),
  /// in seconds; past it the job ends with one line naming the wait (MPI_Abort). 0: no limit.
  double timeout_s{300.0};
  /// An uncaught exception (std::terminate) on any rank ends the whole job at once: one line
  /// naming the rank and the exception, then MPI_Abort, instead of the other ranks waiting in
  /// their next collective for a rank that is gone.
  bool abort_on_terminate{true};
  /// Ranks on rank 0's host share its steady clock: their traces are aligned exactly, with an
  /// offset of 0. False: measure their offsets over MPI too, as for other hosts.
  bool same_host_clocks{true};
  /// How the reports are merged.
  MergeOptions merge{};
};

}  // namespace mpi
NSIGHTKIT_DETAIL_END_NAMESPACE
