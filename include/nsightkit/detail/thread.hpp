// Internal: the OS thread id NVTX expects for thread naming.
#pragma once

#include <nsightkit/config.hpp>

#include <cstdint>
#include <thread>

#if defined(_WIN32)
#include <processthreadsapi.h>
#elif defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {

/// The kernel's id of the calling thread, asked of the OS.
inline std::uint32_t os_thread_id_uncached() noexcept {
#if defined(_WIN32)
  return static_cast<std::uint32_t>(GetCurrentThreadId());
#elif defined(__linux__)
  return static_cast<std::uint32_t>(::syscall(SYS_gettid));
#else
  return static_cast<std::uint32_t>(std::hash<std::thread::id>{}(std::this_thread::get_id()));
#endif
}

/// The calling thread's cached id (0 until first asked).
inline std::uint32_t& os_thread_id_cache() noexcept {
  thread_local std::uint32_t id = 0;
  return id;
}

/// The kernel's id of the calling thread (what nsys shows as TID), cached per thread.
inline std::uint32_t os_thread_id() noexcept {
  std::uint32_t& id = os_thread_id_cache();
  if (id == 0) id = os_thread_id_uncached();
  return id;
}

/// Asks the OS again: in a child after fork(), the forking thread has a new id.
inline void refresh_os_thread_id() noexcept { os_thread_id_cache() = os_thread_id_uncached(); }

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
