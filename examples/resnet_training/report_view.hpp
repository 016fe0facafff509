// The training loop's use of nsightkit's report: turning it on as configured, the per-step
// breakdown (data, h2d, forward, backward, optimizer, sync) and writing it.
#pragma once

#include "config.hpp"

#include <cstdio>

namespace resnet {

struct ReportSetup {
  bool on{false};   ///< the report records
  bool own{false};  ///< this program writes it (else NSIGHTKIT_REPORT's exit handler does)
};

/// Turns the report on as --report (or NSIGHTKIT_REPORT, or the default table=stdout) says.
/// The default table is rank 0's alone: other ranks record only when told (--report, with
/// files named per rank, or NSIGHTKIT_REPORT).
ReportSetup setup_report(Config const& config, std::FILE* out, int rank = 0);

/// Drops what the report collected (end of warm-up).
void reset_report();

/// Prints the per-step breakdown and, when `setup.own`, writes the report's outputs.
void finish_report(ReportSetup const& setup, std::FILE* out);

}  // namespace resnet
