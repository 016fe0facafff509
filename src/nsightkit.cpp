// nsightkit's compiled part (NSIGHTKIT_COMPILED; see docs/compile-cost.md).
//
// Compile this file once into the program (CMake: link nsightkit::compiled, which also defines
// NSIGHTKIT_COMPILED for its users) and define NSIGHTKIT_COMPILED in every translation unit that
// includes nsightkit: the headers then only declare the report engine, the emit engine (the one
// place NVTX is included) and the formatting of range and module names, and this file defines
// them. Build it with the same NSIGHTKIT_* settings as the program (under NSIGHTKIT_DISABLE it is
// empty: there is nothing to compile).
#ifndef NSIGHTKIT_COMPILED
#define NSIGHTKIT_COMPILED 1
#endif

#include <nsightkit/config.hpp>

#if NSIGHTKIT_ENABLED
#include <nsightkit/detail/capture/window_impl.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/detail/emit_impl.hpp>
#include <nsightkit/detail/fmt_format.hpp>
#include <nsightkit/detail/module/registry_impl.hpp>
#include <nsightkit/detail/module/scope.hpp>
#include <nsightkit/detail/report/entry_impl.hpp>
#include <nsightkit/report.hpp>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::module {

Name format_module_name(char (&inline_text)[name_inline], fmt::string_view format,
                        fmt::format_args args) noexcept {
  return format_module_name<fmt::memory_buffer>(inline_text, format, args);
}

}  // namespace detail::module
NSIGHTKIT_DETAIL_END_NAMESPACE
#endif
