// A program that calls nothing of nsightkit: its only ranges are raw NVTX calls. Linked with
// nsightkit::nsightkit (compiled.cmake), it still gets the report: the link brings
// src/nsightkit_startup.cpp in, which reads NSIGHTKIT_REPORT at start-up and makes the report the
// program's NVTX tool.
#include <nvtx3/nvToolsExt.h>

int main() {
  for (int step = 0; step < 3; ++step) {
    nvtxRangePushA("raw step");
    nvtxRangePushA("raw work");
    nvtxRangePop();
    nvtxRangePop();
  }
  return 0;
}
