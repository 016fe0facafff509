// nsightkit's compiled part (NSIGHTKIT_COMPILED; see docs/compile-cost.md): the report engine, the
// emit engine (the one place NVTX is included), the formatting of range and module names (page-
// locked memory's sizes too), the capture schedule's grammar, the module path table and the cold
// paths of module hooks and the capture window, defined once for the program.
//
// Every package builds it into libnsightkit and defines NSIGHTKIT_COMPILED for its consumers,
// whose headers then only declare these parts. Built with NSIGHTKIT_DISABLE it defines what a
// disabled program still calls (the report's outputs and grammar): libnsightkit holds both builds,
// each in its own ABI namespace. Without a package: compile this file once with the program's
// settings and -DNSIGHTKIT_COMPILED, and define NSIGHTKIT_COMPILED in every translation unit.
#ifndef NSIGHTKIT_COMPILED
#define NSIGHTKIT_COMPILED 1
#endif
// The start-up read of NSIGHTKIT_REPORT is src/nsightkit_startup.cpp's: linking the engine must not
// start the report in a program whose translation units all define NSIGHTKIT_REPORT_NO_AUTOSTART.
#ifndef NSIGHTKIT_REPORT_NO_AUTOSTART
#define NSIGHTKIT_REPORT_NO_AUTOSTART 1
#endif

#include <nsightkit/config.hpp>

#include <nsightkit/detail/capture/schedule_parse.hpp>
#include <nsightkit/detail/capture/step_impl.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/detail/report/entry_impl.hpp>
#include <nsightkit/detail/report/report_impl.hpp>
#include <nsightkit/detail/report/types_impl.hpp>
#include <nsightkit/report.hpp>

#if NSIGHTKIT_ENABLED
#include <nsightkit/detail/capture/cuda.hpp>
#include <nsightkit/detail/capture/window_impl.hpp>
#include <nsightkit/detail/emit_impl.hpp>
#include <nsightkit/detail/fmt_format.hpp>
#include <nsightkit/detail/module/handle_impl.hpp>
#include <nsightkit/detail/module/hooks_impl.hpp>
#include <nsightkit/detail/module/install_impl.hpp>
#include <nsightkit/detail/module/registry_impl.hpp>
#include <nsightkit/detail/module/scope.hpp>
#include <nsightkit/detail/module/scope_impl.hpp>
#include <nsightkit/detail/pinned/status.hpp>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::module {

Name format_module_name(char (&inline_text)[name_inline], fmt::string_view format,
                        fmt::format_args args) noexcept {
  return format_module_name<fmt::memory_buffer>(inline_text, format, args);
}

}  // namespace detail::module

namespace detail::pinned {

Emitted memory_range_push(char const* label, std::size_t bytes) noexcept {
  return memory_range_push_here(label, bytes);
}

}  // namespace detail::pinned
NSIGHTKIT_DETAIL_END_NAMESPACE
#endif
