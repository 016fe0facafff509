// Internal: header-only or compiled — where nsightkit's heavy, rarely called parts are defined.
//
// Compiled (`NSIGHTKIT_COMPILED`, which every package defines for its consumers: the CMake target
// nsightkit::nsightkit, pkg-config, Conan, vcpkg), the public headers only declare those parts and
// one library defines them for the whole program: src/nsightkit.cpp and src/nsightkit_cuda.cpp,
// built into libnsightkit (see docs/compile-cost.md). Header-only (a plain -I, without the
// macro), every translation unit that includes <nsightkit/report.hpp> parses the whole report
// engine and generates its code, because the NSIGHTKIT_REPORT start-up reads the variable from a
// static initialiser that reaches enable(), the at-exit writer and every output format. The parts:
//
// - the report's entry points (detail/report/entry.hpp): everything Report, ReportOptions::parse
//   and CurrentStream call, the start-up read of NSIGHTKIT_REPORT included;
// - the formatting of range and module names (detail::emit_formatted_out in emit.hpp,
//   detail::module::format_module_name), so that a formatted range does not instantiate {fmt}'s
//   formatting engine where it is written;
// - the emit engine (detail/emit_engine.hpp, through detail/emit_impl.hpp): every NVTX call, so
//   that no other translation unit includes NVTX, whose headers generate its initialisation code
//   in every translation unit that includes them;
// - the cold paths of module hooks and of CaptureWindow;
// - the members of PinnedMemoryPool and graph recording's text and watch functions
//   (src/nsightkit_cuda.cpp: a separate object, linked only into programs that use them).
//
// Under NSIGHTKIT_DISABLE the switch keeps its meaning: what still works there (the report's
// outputs and grammar, the pool, graph recording) is declared here and defined by the same sources
// compiled with NSIGHTKIT_DISABLE, so a disabled translation unit includes no engine either. The
// CUPTI GPU source (<nsightkit/cupti.hpp>) stays header-only. Behaviour is the same in both
// modes. Functions marked NSIGHTKIT_DETAIL_ENTRY are inline in the header-only mode and declared
// only (defined once, with default visibility) in the compiled mode; out-of-class member
// definitions are marked NSIGHTKIT_DETAIL_MEMBER (inline, or nothing).
#pragma once

#include <nsightkit/config.hpp>

#if defined(NSIGHTKIT_COMPILED)
#define NSIGHTKIT_DETAIL_COMPILED 1
#define NSIGHTKIT_DETAIL_ENTRY NSIGHTKIT_DETAIL_VISIBLE
#define NSIGHTKIT_DETAIL_MEMBER
#else
#define NSIGHTKIT_DETAIL_COMPILED 0
#define NSIGHTKIT_DETAIL_ENTRY inline
#define NSIGHTKIT_DETAIL_MEMBER inline
#endif
