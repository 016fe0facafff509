// Internal: header-only or compiled — where nsightkit's heavy, rarely called parts are defined.
//
// Header-only (the default), every translation unit that includes <nsightkit/report.hpp> parses
// the whole report engine and generates its code: the NSIGHTKIT_REPORT start-up reads the
// variable from a static initialiser, which reaches enable(), the at-exit writer and every output
// format. That is seconds of compile time and hundreds of MB per translation unit (see
// docs/compile-cost.md). With `NSIGHTKIT_COMPILED` defined in every translation unit of the
// program, the public headers only declare those parts, and one translation unit defines them:
// src/nsightkit.cpp (CMake: link nsightkit::compiled), with src/nsightkit_cuda.cpp for the CUDA
// parts. The parts are:
//
// - the report's entry points (detail/report/entry.hpp): everything Report, ReportOptions::parse
//   and CurrentStream call, the start-up read of NSIGHTKIT_REPORT included;
// - the formatting of range and module names (detail::emit_formatted_out in emit.hpp,
//   detail::module::format_module_name), so that a formatted range does not instantiate {fmt}'s
//   formatting engine where it is written;
// - the emit engine (detail/emit_engine.hpp, through detail/emit_impl.hpp): every NVTX call, so
//   that no other translation unit includes NVTX, whose headers generate its initialisation code
//   in every translation unit that includes them;
// - the members of PinnedMemoryPool, which instantiate the pool's core (detail/pinned/pool_impl.hpp,
//   defined in src/nsightkit_cuda.cpp: a separate object, linked only into programs that use the
//   pool, which link the CUDA runtime anyway).
//
// The CUPTI GPU source (<nsightkit/cupti.hpp>) stays header-only. Behaviour is the same in both
// modes. Functions marked NSIGHTKIT_DETAIL_ENTRY are inline in the header-only mode and declared
// only (defined once, with default visibility) in the compiled mode; out-of-class member
// definitions are marked NSIGHTKIT_DETAIL_MEMBER (inline, or nothing). Under NSIGHTKIT_DISABLE
// there is nothing to compile and the switch is ignored.
#pragma once

#include <nsightkit/config.hpp>

#if defined(NSIGHTKIT_COMPILED) && NSIGHTKIT_ENABLED
#define NSIGHTKIT_DETAIL_COMPILED 1
#define NSIGHTKIT_DETAIL_ENTRY NSIGHTKIT_DETAIL_VISIBLE
#define NSIGHTKIT_DETAIL_MEMBER
#else
#define NSIGHTKIT_DETAIL_COMPILED 0
#define NSIGHTKIT_DETAIL_ENTRY inline
#define NSIGHTKIT_DETAIL_MEMBER inline
#endif
