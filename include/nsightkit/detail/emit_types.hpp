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

/// Whether a tool handles NVTX pushes in this linkage unit. Ordered: every state from `tool` on
/// has a tool listening, so the hot path asks with one compare.
enum class NvtxPushState : unsigned char {
  unresolved = 0,   ///< not known yet: NVTX has not been initialised here
  no_tool = 1,      ///< NVTX nulled the push pointer at initialisation
  tool = 2,         ///< a tool handles pushes
  report_tool = 3,  ///< the tool is the report's own (report_tool_push), which ignores what the
                    ///< sinks already get: a range the sinks get makes no NVTX call then
};

/// The NvtxPushState of this linkage unit, as last resolved. nsightkit answers the hot "is anyone
/// listening?" question from this flag rather than from NVTX's function pointer: NVTX writes its
/// pointers with plain stores while it initialises, so reading one from another thread at that
/// moment is a data race (ThreadSanitizer reports it); the flag is written only after
/// initialisation has finished (detail/nvtx.hpp, nvtx_resolve_listening).
inline std::atomic<NvtxPushState> nvtx_push_state{NvtxPushState::unresolved};

/// The push callback the report's NVTX tool installs (detail/report/nvtx_tool.hpp), set before
/// NVTX's initialisation returns; 0 while it has attached nowhere. One per process.
NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<std::uintptr_t> report_tool_push{0};

#else

struct Emitted {};

#endif

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
