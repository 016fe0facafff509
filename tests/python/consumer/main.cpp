// A range from the headers of the Python package's nsightkit (run_package.py configures this).
#include <nsightkit/range.hpp>

int main() {
  nsightkit::ScopedRange range{"main"};
  return 0;
}
