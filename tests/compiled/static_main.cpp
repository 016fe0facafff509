// The executable over static_lib.cpp: its own range, the library's ranges, the report in-process.
#include <nsightkit/report.hpp>

#include <cstdio>

void static_lib_work(int step);

int main() {
  nsightkit::ReportOptions o;
  o.at_exit = false;
  if (nsightkit::enabled && !nsightkit::Report::enable(o)) return 1;
  {
    nsightkit::ScopedRange r{"main"};
    for (int step = 0; step < 2; ++step) static_lib_work(step);
  }
  auto const snap = nsightkit::Report::snapshot();
  auto const* row = snap.find("main/lib step 1/lib layer");
  if (nsightkit::enabled && (row == nullptr || row->cpu.count != 1)) {
    std::fprintf(stderr, "FAIL: no path main/lib step 1/lib layer\n%s",
                 nsightkit::format_table(snap).c_str());
    return 1;
  }
  std::printf("ok\n");
  return 0;
}
