// Internal: creating the one State of the process — after claiming the process for this copy of
// the report (claim.hpp), with the fork handlers installed (fork.hpp).
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/report/claim.hpp>
#include <nsightkit/detail/report/fork.hpp>
#include <nsightkit/detail/report/owner_lock.hpp>
#include <nsightkit/detail/report/state.hpp>
#if NSIGHTKIT_ENABLED
#include <nsightkit/detail/report/nvtx_tool.hpp>
#endif

#include <atomic>
#include <cstdint>
#include <mutex>

#if !defined(_WIN32)
#include <pthread.h>
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// Serialises the creation of the State.
NSIGHTKIT_DETAIL_VISIBLE inline std::mutex create_mutex;

/// This copy's NVTX entry (null in a disabled build).
inline NvtxAttach own_nvtx_attach() noexcept {
#if NSIGHTKIT_ENABLED
  return [](void const* (*get)(std::uint32_t)) -> int {
    return nvtx_tool::attach(reinterpret_cast<NvtxGetExportTableFunc_t>(get));
  };
#else
  return nullptr;
#endif
}

/// The State of the process, created (and its fork handlers installed) on first use; null when
/// another copy of nsightkit owns the report, or out of memory.
inline State* state_create() noexcept {
  if (State* s = state()) return s;
  NSIGHTKIT_DETAIL_TRY {
    std::lock_guard<std::mutex> lock{create_mutex};
    if (State* s = state()) return s;
    if (!claim_process(static_cast<void const*>(&state_ptr), own_nvtx_attach())) return nullptr;
    // Registering for membarrier (owner_lock.hpp) waits for an RCU grace period once the process
    // has threads, several milliseconds: here, at enable, not at some thread's first range.
    (void)membarrier_ready();
    auto* s = new State{};  // leaked on purpose: ranges may end during static destruction
#if !defined(_WIN32)
    (void)::pthread_atfork(&fork_prepare, &fork_parent, &fork_child);
#endif
    state_ptr.store(s, std::memory_order_release);
    return s;
  }
  NSIGHTKIT_DETAIL_CATCH(...) { return nullptr; }
  return nullptr;
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
