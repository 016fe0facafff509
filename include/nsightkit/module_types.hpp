/**
 * @file module_types.hpp
 * @brief nsightkit::ModuleInfo (what a module hook learns), nsightkit::ModuleHook and
 *        nsightkit::max_module_depth — the plain types of module hooks (see module.hpp).
 *
 * No NVTX and no registry: code that only handles ModuleInfo (a hook's body, a logger) and
 * nsightkit's own internals include this header alone.
 */
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/function.hpp>

#include <cstdint>
#include <string_view>
#include <thread>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

/**
 * @brief What a hook learns about the module call it runs for.
 *
 * `name` and `path` view strings owned by nsightkit's path table: valid (and NUL-terminated)
 * for the rest of the process, so a hook may keep them. A path's text is built the first time it
 * is asked for (by a hook or current_module_path()) and then kept.
 *
 * @code
 * auto h = nsightkit::add_pre_hook([](nsightkit::ModuleInfo const& m) {
 *   std::printf("%*s%s (call %llu)\n", 2 * m.depth, "", m.path.data(),
 *               static_cast<unsigned long long>(m.call_count));
 * });
 * @endcode
 */
struct ModuleInfo {
  /// The module's own name, the last component of `path` (also the name of its NVTX range).
  std::string_view name;
  /// Full path from the outermost module of the thread: "backbone/layer1/0/conv1". Scopes that
  /// began before anything observed modules (see track_module_paths()) are not part of it.
  std::string_view path;
  /// Number of enclosing modules on this thread (0 for an outermost module).
  int depth{0};
  /// 1-based number of this call among the calls of this path, process-wide (all threads).
  /// Counted while at least one user hook is installed: calls made with no hook installed are
  /// not counted.
  std::uint64_t call_count{0};
  /// The calling thread.
  std::thread::id thread{};
  /// The calling thread's OS id (the TID Nsight Systems shows).
  std::uint32_t os_thread_id{0};
  /// The wrapped module object for Hooked<M> (`&hooked.get()`), the wrapped function for
  /// instrument(), null for a plain ModuleScope.
  void const* module{nullptr};
  /// True in post hooks when the module is left by an exception.
  bool unwinding{false};
};

/// The type hooks are stored as: any callable `void(ModuleInfo const&)` converts to it.
using ModuleHook = std::function<void(ModuleInfo const&)>;

/**
 * @brief The deepest nesting of module scopes that gets paths: scopes nested deeper (the
 *        1025th scope of a thread's stack and below) push their ranges as usual but get no path
 *        of their own.
 *
 * For such a scope no hook runs, and current_module_path() names its ancestor at the limit (a
 * one-time message on stderr names this limit). It bounds the memory of paths: a path is stored
 * once per distinct path, as long as its text, so paths asked for at every level of a stack of
 * depth d cost O(d^2) bytes.
 */
inline constexpr int max_module_depth = 1024;

NSIGHTKIT_DETAIL_END_NAMESPACE
