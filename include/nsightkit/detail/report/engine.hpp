// Internal: the report engine as a whole — recording, snapshots, GPU timing and every output — the
// pieces the entry points (entry_impl.hpp) are written over. Public headers include it only
// header-only (through entry_impl.hpp); in the compiled mode src/nsightkit.cpp does. Code that uses
// the engine's pieces directly (nsightkit's own tests and tools) includes it itself, in either
// mode. The pieces are declared in disabled builds too (nothing in them runs there).
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/report/advised_snapshot.hpp>
#include <nsightkit/detail/report/events_source.hpp>
#include <nsightkit/detail/report/lifecycle.hpp>
#include <nsightkit/detail/report/options.hpp>
#include <nsightkit/detail/report/output/html.hpp>
#include <nsightkit/detail/report/output/summary.hpp>
#include <nsightkit/detail/report/output/table.hpp>
#include <nsightkit/detail/report/trace/stream.hpp>
