// A static library that uses nsightkit (compiled.cmake): the executable that links it and
// nsightkit::nsightkit as well must link libnsightkit once, with no duplicate symbol.
#include <nsightkit/module.hpp>
#include <nsightkit/range.hpp>

void static_lib_work([[maybe_unused]] int step) {  // unused when disabled: the macro vanishes
  NSIGHTKIT_RANGE("lib step {}", step);
  NSIGHTKIT_MODULE("lib layer");
}
