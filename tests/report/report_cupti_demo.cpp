// A program linked with nsightkit::cupti, compiled by the plain C++ compiler: the report picks
// the CUPTI source where a device exists, and where none does it says so once and goes on with
// CPU times (and CUDA events where a stream is current).
#include <nsightkit/nsightkit.hpp>

#include <cstdio>

int main() {
  for (int step = 0; step < 3; ++step) {
    nsightkit::ScopedRange r{"step"};
    nsightkit::ScopedRange f{"forward"};
  }
  std::printf("cupti: %s\n", nsightkit::cupti_available()
                                 ? "available"
                                 : nsightkit::cupti_unavailable_reason().c_str());
  return 0;
}
