// Internal: the process-wide state behind module hooks (module.hpp). Only included when
// instrumentation is enabled.
//
// - Module frames: once something observes modules ("tracking": a hook, an NVTX tool, a sink,
//   track_module_paths(); sticky), every ModuleScope links itself into a per-thread intrusive
//   stack (a pointer in thread-local storage, no allocation). Before that a scope keeps no state
//   at all, which is what keeps an unobserved scope as cheap as a ScopedRange. Paths are resolved
//   from the stack only when someone needs them, so a hook installed while modules already run
//   sees full paths (of scopes begun after tracking started).
// - Path table (its types here, its code in detail/module/paths.hpp): one node per distinct
//   (parent node, name), created once and never freed. A node holds its parent link, its own
//   name, depth and call counter - not its full path: that string is built on the first request
//   (a hook's ModuleInfo::path, current_module_path()) and kept, so a chain of depth d costs O(d)
//   memory, not O(d^2), unless every level's path is asked for (bounded by depth_limit). Nodes
//   are found through one hash table keyed by (parent, name): lookups are lock-free (open
//   addressing, slots written once); creation and growth take a mutex, and a grown table keeps
//   the one it replaced, which readers may still be probing.
// - Hook sets: immutable hook lists replaced on every add/remove (copy on write) and published
//   through a mutex-guarded shared_ptr. The global set is read through a per-thread snapshot
//   revalidated by one atomic version load, so running modules never lock while hooks are stable.
// - Removal is synchronous: once remove() returns, the hook is not running on another thread and
//   will not be called again (a per-hook running count, Dekker-style with the removed flag).
#pragma once

#include <nsightkit/attributes.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/detail/function.hpp>

#if !NSIGHTKIT_ENABLED
#error "nsightkit/detail/module/registry.hpp must not be included when NSIGHTKIT_DISABLE is defined"
#endif

#include <nsightkit/detail/emit.hpp>
#include <nsightkit/detail/sinks.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

struct ModuleInfo;

namespace detail::module {

// ---------------------------------------------------------------------------------------------
// Path table

/// Module scopes nested deeper than this get no path node of their own (module.hpp's
/// max_module_depth): it bounds the memory of paths that are asked for at every level.
inline constexpr int depth_limit = 1024;

/// One distinct module path: a parent link and the last component. Created once, never freed;
/// immutable except for its counter and its lazily built full path. The name's characters
/// (NUL-terminated) follow the node in the same allocation.
struct PathNode {
  PathNode const* parent{nullptr};
  std::uint64_t hash{0};     ///< of (parent, name): the path table's key
  std::size_t name_size{0};  ///< length of the last component
  std::size_t path_size{0};  ///< length of the full path, components joined by '/'
  int depth{0};              ///< 0 for a module with no enclosing module
  mutable std::atomic<std::uint64_t> calls{0};     // observed calls of this path
  mutable std::atomic<char const*> path{nullptr};  // full path, built on first request

  [[nodiscard]] char const* name() const noexcept {
    return reinterpret_cast<char const*>(this + 1);
  }
};

/// An open-addressing table of nodes: power-of-two capacity, kept at most half full while memory
/// allows and never full, so a probe ends at a free slot. A slot is written once, from null to a
/// node, so readers probe without a lock.
struct PathTable {
  std::size_t mask{0};  ///< capacity - 1
  std::atomic<PathNode const*>* slots{nullptr};
  PathTable const* replaced{nullptr};  ///< kept: readers may still probe it
};

/// Sizes of the path table, for tests and benchmarks.
struct PathTableStats {
  std::size_t nodes{0};       ///< distinct paths
  std::size_t path_bytes{0};  ///< bytes of full-path strings built so far (outermost excluded)
  std::size_t slots{0};       ///< capacity of the current table
};

// ---------------------------------------------------------------------------------------------
// Hooks

/// One installed hook. Shared by the lists that contain it and by its handle.
struct HookEntry {
  std::function<void(ModuleInfo const&)> fn;
  std::atomic<int> running{0};
  std::atomic<bool> removed{false};
};

/// An immutable snapshot of a hook set's lists.
struct HookList {
  std::vector<std::shared_ptr<HookEntry>> pre;
  std::vector<std::shared_ptr<HookEntry>> post;
};

/// A set of hooks (the global one, or one Hooked instance's).
class HookSet {
 public:
  HookSet() = default;
  HookSet(HookSet const&) = delete;
  HookSet& operator=(HookSet const&) = delete;
  /// An instance's set dying with hooks still in it (released handles) takes them out of the
  /// process-wide count of instance hooks. (The global set is never destroyed.)
  ~HookSet();

  /// Number of installed hooks; the hot path reads it to skip everything when zero.
  [[nodiscard]] int count() const noexcept { return count_.load(std::memory_order_relaxed); }

  /// Incremented on every change (the global set's per-thread snapshots compare it).
  [[nodiscard]] std::uint64_t version() const noexcept {
    return version_.load(std::memory_order_acquire);
  }

  /// The current lists (null when empty).
  [[nodiscard]] std::shared_ptr<HookList const> snapshot() const noexcept;

  /// The current lists and the version they belong to.
  std::shared_ptr<HookList const> snapshot(std::uint64_t& version) const noexcept;

  /// Installs `e` as a pre (post = false) or post hook. @throws std::bad_alloc
  void add(std::shared_ptr<HookEntry> e, bool post);

  /// Removes `e` from the lists; returns false when it was not there.
  bool erase(HookEntry const* e) noexcept;

 private:
  void publish(std::shared_ptr<HookList const> next) noexcept;

  // The counter first: it is what the hot path reads.
  std::atomic<int> count_{0};
  std::atomic<std::uint64_t> version_{1};
  std::shared_ptr<HookList const> list_;
  mutable std::mutex mutex_;
};

// ---------------------------------------------------------------------------------------------
// The domain of the default module ranges, chosen at run time

/// Emission functions of one domain, instantiated by set_module_domain<D>().
struct DomainOps {
  char const* name;
  Emitted (*push)(char const* name) noexcept;
  Emitted (*push_text)(char const* text, std::size_t size) noexcept;
  void (*pop)(Emitted const& e) noexcept;
};

/// The default pre hook: a push through the foundation's emission path (NVTX and sinks), the
/// name a registered string.
template <class D>
inline Emitted push(char const* name) noexcept {
  return emit_static<D, Op::push>(Attributes{}, name);
}

/// The default pre hook of a scope with a formatted name: a plain message, like a formatted
/// range's (per-call text is not registered, so it cannot grow the tool's string table).
template <class D>
inline Emitted push_text(char const* text, std::size_t size) noexcept {
  return emit_dynamic<D, Op::push>(Attributes{}, text, size);
}

/// The default post hook: pops wherever push<D> pushed.
template <class D>
inline void pop(Emitted const& e) noexcept {
  end_push<D>(e);
}

template <class D>
inline constexpr DomainOps domain_ops{D::name, &push<D>, &push_text<D>, &pop<D>};

// ---------------------------------------------------------------------------------------------
// The registry

/// Registry::mode bits.
inline constexpr unsigned mode_ranges = 1u;    ///< default module ranges on
inline constexpr unsigned mode_tracking = 2u;  ///< scopes keep the per-thread module stack (sticky)

struct Registry {
  // What every module scope reads comes first, in one cache line.
  std::atomic<unsigned> mode{mode_ranges};
  std::atomic<int> instance_hooks{0};  ///< hooks installed on Hooked instances, all instances
  std::atomic<DomainOps const*> domain{&domain_ops<DefaultDomain>};
  HookSet global;
  std::atomic<PathTable const*> paths{nullptr};  ///< the current path table (null until used)
  std::mutex path_mutex;                         ///< serialises node creation and growth
  std::size_t path_count{0};                     ///< nodes in the table (under path_mutex)
  std::atomic<std::size_t> path_bytes{0};        ///< see PathTableStats
  std::atomic<bool> hook_exception_reported{false};
  std::atomic<bool> bad_name_reported{false};
  std::atomic<bool> depth_limit_reported{false};
  std::atomic<bool> out_of_memory_reported{false};
};

/// Holds a value that is constant-initialised and never destroyed: modules may still run on
/// detached threads while the process exits.
template <class T>
union NeverDestroyed {
  T value;
  constexpr NeverDestroyed() : value{} {}
  ~NeverDestroyed() {}
};

/// The one registry of the process (default visibility: shared by every library that embeds
/// nsightkit and is linked or loaded globally, like the sink registry).
NSIGHTKIT_DETAIL_VISIBLE inline NeverDestroyed<Registry> registry_storage{};

inline Registry& registry() noexcept { return registry_storage.value; }

/// From now on, module scopes keep the per-thread module stack (paths for hooks and
/// current_module_path()). Sticky: once something observed modules, paths stay exact even while
/// hooks come and go. Scopes already running when it turns on are not part of the stack.
inline void start_tracking() noexcept {
  Registry& reg = registry();
  if ((reg.mode.load(std::memory_order_relaxed) & mode_tracking) == 0) {
    reg.mode.fetch_or(mode_tracking, std::memory_order_relaxed);
  }
}

// ---------------------------------------------------------------------------------------------
// Per-thread module stack

/// The part of a ModuleScope that other scopes of its thread read. Lives on the thread's stack.
struct Frame {
  char const* name;
  Frame* parent;
  PathNode const* node;  ///< resolved on first need, then cached (see resolve())
};

/// The innermost module scope of the calling thread (null outside any module).
NSIGHTKIT_DETAIL_VISIBLE inline thread_local Frame* current_frame = nullptr;

/// Hook entries running on this thread, innermost last (for self-removal and re-entrancy).
struct RunningHooks {
  static constexpr int capacity = 16;
  HookEntry const* entries[capacity];
  int depth;
};
NSIGHTKIT_DETAIL_VISIBLE inline thread_local RunningHooks running_hooks{};

/// One message per process when a module name is malformed (ModuleScope cannot throw).
NSIGHTKIT_DETAIL_ENTRY void report_bad_name(char const* name) noexcept;

/// A valid module name: non-empty and without '/'.
inline bool valid_name(std::string_view name) noexcept {
  return !name.empty() && name.find('/') == std::string_view::npos;
}

/// One message per process when module scopes nest deeper than depth_limit.
NSIGHTKIT_DETAIL_ENTRY void report_depth_limit() noexcept;

/// One message per process when the path table cannot grow.
NSIGHTKIT_DETAIL_ENTRY void report_out_of_memory() noexcept;

/// The global hook lists as this thread last saw them, revalidated by one version load. The
/// result stays valid while the caller runs hooks: hooks do not run (so this cache is not
/// refreshed) in module scopes entered from inside a hook.
NSIGHTKIT_DETAIL_ENTRY HookList const* global_hooks_snapshot() noexcept;

/// One message per process when a hook throws (hooks run in constructors and destructors that
/// must not throw; the exception is dropped).
NSIGHTKIT_DETAIL_ENTRY void report_hook_exception() noexcept;

/// Calls `e` unless it was removed, counting the call so a concurrent remove() can wait for it.
NSIGHTKIT_DETAIL_ENTRY void invoke_hook(HookEntry& e, ModuleInfo const& info) noexcept;

/// Runs the pre or post hooks of `list` for `info`.
NSIGHTKIT_DETAIL_ENTRY void run_hooks(HookList const* list, bool post,
                                      ModuleInfo const& info) noexcept;

/// current_module_path() when the innermost frame's node or its path is not known yet: resolves
/// them in the path table (detail/module/paths.hpp). "" when out of memory.
NSIGHTKIT_DETAIL_ENTRY std::string_view current_path_slow(Frame* f) noexcept;

/// Unregisters `e` from `set`; on return, `e` runs on no other thread and is never called again.
/// Called from inside the hook itself (or from a hook it calls), it does not wait for itself.
NSIGHTKIT_DETAIL_ENTRY void remove_hook(HookSet& set, std::shared_ptr<HookEntry> const& e) noexcept;

}  // namespace detail::module
NSIGHTKIT_DETAIL_END_NAMESPACE

#if !NSIGHTKIT_DETAIL_COMPILED
#include <nsightkit/detail/module/registry_impl.hpp>
#endif
