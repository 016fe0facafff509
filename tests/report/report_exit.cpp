// Prints to stdout without a newline (so the text sits in stdio's buffer), records a range on the
// main thread and returns: the report's table, written at exit, must follow the program's output.
#include <nsightkit/report.hpp>

#include <cstdio>

int main() {
  std::printf("program output, still buffered");
  nsightkit::ScopedRange r{"main work"};
  return 0;
}
