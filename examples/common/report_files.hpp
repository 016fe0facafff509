// The report's output files of one run of several (eager and CUDA-graph runs of one program):
// every file name tagged with the run, so the runs do not overwrite each other's files.
#pragma once

#include <nsightkit/report.hpp>

#include <string>

namespace nn {

/// `path` with `.tag` before its extension: "r.json" -> "r.eager.json", "out/r" -> "out/r.eager",
/// "t.json.gz" -> "t.eager.json.gz" (a compressed output keeps both extensions after the tag).
std::string tagged_path(std::string const& path, char const* tag);

/// `o` with every file output tagged (a table on stdout or stderr stays where it is).
nsightkit::ReportOptions tagged_options(nsightkit::ReportOptions o, char const* tag);

}  // namespace nn
