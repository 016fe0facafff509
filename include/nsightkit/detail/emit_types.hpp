// Internal: the emit engine's vocabulary, free of NVTX: what an event does, what an emission
// reached, call-site tags, and the flag that says whether an NVTX tool listens. The compiled mode's
// headers (detail/compiled.hpp) see only this; the engine itself is in detail/emit_engine.hpp.
#pragma once

#include <nsightkit/config.hpp>

#include <atomic>
#include <cstdint>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {

/// Identifies one macro call site (a distinct lambda type per site) for per-site statics.
template <class Site>
struct SiteTag {};

template <class Site>
constexpr SiteTag<Site> make_site(Site) noexcept {
  return {};
}

/// What an event does: begin a push/pop range, begin a start/end range, or mark an instant.
enum class Op { push, start, mark };

#if NSIGHTKIT_ENABLED

/// What an emission reached, so the end of the range goes to the same places.
struct Emitted {
  bool nvtx{false};
  bool sinks{false};
  std::uint64_t nvtx_id{0};  ///< nvtxRangeId_t of a start/end range
  std::uint64_t sink_id{0};
};

/// Whether a tool handles pushes in this linkage unit, as last resolved: 0 = not yet known,
/// 1 = no (NVTX nulled the push pointer at initialisation), 2 = yes, 3 = yes, and the tool is the
/// report's own (report_tool_push), which ignores what the sinks already get: a range the sinks
/// get makes no NVTX call then. nsightkit answers the hot "is anyone listening?" question from
/// this flag rather than from NVTX's function pointer: NVTX writes its pointers with plain stores
/// while it initialises, so reading one from another thread at that moment is a data race
/// (ThreadSanitizer reports it); the flag is written only after initialisation has finished
/// (detail/nvtx.hpp, nvtx_resolve_listening).
inline std::atomic<unsigned char> nvtx_push_state{0};

/// The push callback the report's NVTX tool installs (detail/report/nvtx_tool.hpp), set before
/// NVTX's initialisation returns; 0 while it has attached nowhere. One per process.
NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<std::uintptr_t> report_tool_push{0};

#else

struct Emitted {};

#endif

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
