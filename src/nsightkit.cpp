// nsightkit's compiled part (NSIGHTKIT_COMPILED; see docs/compile-cost.md).
//
// Compile this file once into the program (CMake: link nsightkit::compiled, which also defines
// NSIGHTKIT_COMPILED for its users) and define NSIGHTKIT_COMPILED in every translation unit that
// includes nsightkit: the headers then only declare the report engine and the formatting of range
// names, and this file defines them. Build it with the same NSIGHTKIT_* settings as the program
// (under NSIGHTKIT_DISABLE it is empty: there is nothing to compile).
#ifndef NSIGHTKIT_COMPILED
#define NSIGHTKIT_COMPILED 1
#endif

#include <nsightkit/config.hpp>

#if NSIGHTKIT_ENABLED
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/detail/emit.hpp>
#include <nsightkit/detail/report/entry_impl.hpp>
#include <nsightkit/report.hpp>

#include <fmt/format.h>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {

void vformat_name(fmt::memory_buffer& buf, fmt::string_view f, fmt::format_args args) {
  fmt::vformat_to(fmt::appender(buf), f, args);
}

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
#endif
