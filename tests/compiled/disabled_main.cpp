// The main() of a program compiled with NSIGHTKIT_DISABLE on its target (compiled.cmake): with the
// instrumented function of disabled_object.cpp and the report's API, it must link nothing of the
// report engine, NVTX or dlopen (check_disabled_object.py --program).
#include <nsightkit/nsightkit.hpp>

#include <cstdio>

extern "C" int nsk_instrumented(int const* v, int n);

int main() {
  int const v[] = {1, 2, 3};
  nsightkit::Report::enable();
  std::printf("%d %s\n", nsk_instrumented(v, 3),
              nsightkit::format_table(nsightkit::Report::snapshot()).c_str());
  return 0;
}
