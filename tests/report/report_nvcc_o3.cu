// Compiled only (an object library): nvcc at -O3 with warnings as errors over a translation unit
// that formats every report output. g++ 12 warned (-Wstringop-overflow) inside fmt 9's format-string
// checks there; detail/fmt.hpp silences it for {fmt}'s own lines.
#include <nsightkit/nsightkit.hpp>

#include <string>

std::string nsightkit_report_outputs(int i) {
  nsightkit::ScopedRange const range{"range {}", i};
  NSIGHTKIT_MODULE("module {}", i);
  auto const snapshot = nsightkit::Report::snapshot();
  return nsightkit::format_table(snapshot) + nsightkit::summary_json(snapshot) +
         nsightkit::summary_csv(snapshot) + nsightkit::Report::trace_json() +
         nsightkit::html_page(snapshot);
}
