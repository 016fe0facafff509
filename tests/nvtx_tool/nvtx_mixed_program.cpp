// nsightkit's ranges and raw NVTX ranges nested in one another, in a program that carries its own
// report: under `nsightkit profile` the NVTX tool library hands every NVTX module to it.
#include <nsightkit/range.hpp>
#include <nsightkit/report.hpp>

#include <nvtx3/nvtx3.hpp>

int main() {
  for (int i = 0; i < 4; ++i) {
    nsightkit::ScopedRange model{"model"};
    nvtxRangePushA("library call");
    { NSIGHTKIT_RANGE("layer"); }
    nvtxRangePop();
  }
  return 0;
}
