// Compiled with NSIGHTKIT_DISABLE and -O2; check_disabled_object.py verifies that the object
// references no NVTX or dlopen symbol and that the instrumented function's machine code equals the
// uninstrumented one's.
#include <nsightkit/nsightkit.hpp>

extern "C" int nsk_plain(int const* v, int n) {
  int s = 0;
  for (int i = 0; i < n; ++i) s += v[i] * 3;
  return s;
}

extern "C" int nsk_instrumented(int const* v, int n) {
  NSIGHTKIT_FUNC_RANGE();
  nsightkit::ScopedRange r{"sum {}", n};
  int s = 0;
  for (int i = 0; i < n; ++i) {
    NSIGHTKIT_RANGE("item {}", i);
    nsightkit::mark("m");
    s += v[i] * 3;
  }
  return s;
}
