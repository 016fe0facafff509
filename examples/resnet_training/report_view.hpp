// The training loop's use of nsightkit's report: turning it on as configured, the per-step
// breakdown (data, h2d, forward, backward, optimizer, sync) and writing it.
#pragma once

#include "config.hpp"

#include <nsightkit/report_types.hpp>

#include <cstdio>
#include <string>

namespace resnet {

struct ReportSetup {
  bool on{false};   ///< the report records
  bool own{false};  ///< this program writes it (else NSIGHTKIT_REPORT's exit handler does)
  nsightkit::ReportOptions options;  ///< what it writes, when `own`
};

/// Turns the report on as --report (or NSIGHTKIT_REPORT, or the default table=stdout) says.
/// The default table is rank 0's alone: other ranks record only when told (--report, with
/// files named per rank, or NSIGHTKIT_REPORT).
ReportSetup setup_report(Config const& config, std::FILE* out, int rank = 0);

/// Drops what the report collected (end of warm-up).
void reset_report();

/// Prints the per-step breakdown and, when `setup.own`, writes the report's outputs. With a
/// `tag` (--cuda-graph: "eager", "graph") a heading naming `run` comes first and every output
/// file is named with the tag before its extension ("r.json" -> "r.eager.json"); the table on
/// stdout or stderr stays where it is. Without `setup.own` (NSIGHTKIT_REPORT writes at exit)
/// only the last run's report is written, which a tagged call says.
void finish_report(ReportSetup const& setup, std::FILE* out, char const* tag = nullptr,
                   char const* run = nullptr);

/// --cuda-graph: per step, the CPU time, kernels and GPU busy time of the step's ranges and of
/// the model's top-level modules, eager and replayed side by side (`steps`: the measured steps
/// of each run). Kernels and busy time come from the CUPTI source; a note says so otherwise.
void print_graph_comparison(std::FILE* out, nsightkit::ReportSnapshot const& eager,
                            nsightkit::ReportSnapshot const& graph, int steps);

}  // namespace resnet
