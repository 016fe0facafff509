// Internal: what the public module functions, HookHandle and Hooked call — the module registry's
// switches, a hook handle's state, a Hooked instance's hook set — with an enabled and a disabled
// (NSIGHTKIT_DISABLE: nothing stored, nothing called) definition side by side, so module.hpp and
// hooked.hpp are written once.
#pragma once

#include <nsightkit/attributes.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/module_types.hpp>

#include <atomic>
#include <memory>
#include <string_view>
#include <utility>

#if NSIGHTKIT_ENABLED
#include <nsightkit/detail/module/registry.hpp>
#endif

// ModuleScope's constructors are forced inline: clang otherwise keeps them out of line, and the
// common path (nobody observes, detail/module/scope.hpp) is a handful of instructions.
#if NSIGHTKIT_ENABLED && (defined(__GNUC__) || defined(__clang__))
#define NSIGHTKIT_DETAIL_MODULE_SCOPE_INLINE __attribute__((always_inline))
#else
#define NSIGHTKIT_DETAIL_MODULE_SCOPE_INLINE
#endif

// NSIGHTKIT_MODULE's expansion (module.hpp); disabled, its arguments are not evaluated.
#if NSIGHTKIT_ENABLED
#define NSIGHTKIT_DETAIL_MODULE(...)                                                               \
  ::nsightkit::ModuleScope const NSIGHTKIT_DETAIL_UNIQUE(nsightkit_module_) {                      \
    ::nsightkit::detail::make_site([] {}),                                                         \
        NSIGHTKIT_DETAIL_FMT_STRING(NSIGHTKIT_DETAIL_FIRST(__VA_ARGS__)), __VA_ARGS__              \
  }
#else
#define NSIGHTKIT_DETAIL_MODULE(...) static_cast<void>(0)
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {
namespace module {

#if NSIGHTKIT_ENABLED

/// A HookHandle's hook: the entry and the set it was added to.
class HandleState {
 public:
  HandleState() noexcept = default;
  HandleState(std::shared_ptr<HookEntry> entry, std::shared_ptr<HookSet> set) noexcept
      : entry_{std::move(entry)}, set_{std::move(set)} {}

  [[nodiscard]] bool active() const noexcept { return entry_ != nullptr; }

  /// Removes the hook and waits until no other thread runs it (remove_hook()).
  void remove() noexcept {
    if (entry_ && set_) remove_hook(*set_, entry_);
    release();
  }

  /// Forgets the hook, which stays installed.
  void release() noexcept {
    entry_.reset();
    set_.reset();
  }

 private:
  std::shared_ptr<HookEntry> entry_;
  std::shared_ptr<HookSet> set_;
};

/// set_module_domain<D>().
template <class D>
inline void set_domain() noexcept {
  registry().domain.store(&domain_ops<D>, std::memory_order_release);
}

/// module_domain().
inline char const* domain_name() noexcept {
  return registry().domain.load(std::memory_order_acquire)->name;
}

/// set_module_ranges().
inline void set_ranges(bool on) noexcept {
  auto& mode = registry().mode;
  if (on) {
    mode.fetch_or(mode_ranges, std::memory_order_relaxed);
  } else {
    mode.fetch_and(~mode_ranges, std::memory_order_relaxed);
  }
}

/// module_ranges().
inline bool ranges_on() noexcept {
  return (registry().mode.load(std::memory_order_relaxed) & mode_ranges) != 0;
}

/// current_module_path().
inline std::string_view current_path() noexcept {
  Frame* f = current_frame;
  if (f == nullptr) return {};
  // The common case inline: the frame's node and its path are known. Resolving them is the path
  // table's work (detail/module/paths.hpp), out of line.
  if (PathNode const* n = f->node) {
    if (char const* path = n->path.load(std::memory_order_acquire)) return {path, n->path_size};
  }
  return current_path_slow(f);
}

/// track_module_paths().
inline void track_paths() noexcept { start_tracking(); }

#else  // NSIGHTKIT_DISABLE

class HookSet;

class HandleState {
 public:
  [[nodiscard]] bool active() const noexcept { return false; }
  void remove() noexcept {}
  void release() noexcept {}
};

template <class D>
inline void set_domain() noexcept {}
inline char const* domain_name() noexcept { return DefaultDomain::name; }
inline void set_ranges(bool /*on*/) noexcept {}
inline bool ranges_on() noexcept { return false; }
inline std::string_view current_path() noexcept { return {}; }
inline void track_paths() noexcept {}

#endif  // NSIGHTKIT_ENABLED

}  // namespace module

#if NSIGHTKIT_ENABLED

/// Installs `fn` in `set` as a pre (or, with `post`, post) hook and returns its handle's state
/// (detail/module/install_impl.hpp).
NSIGHTKIT_DETAIL_ENTRY module::HandleState add_hook(std::shared_ptr<module::HookSet> set,
                                                    ModuleHook fn, bool post);

/// The registry's global hook set, as a non-owning shared_ptr (the registry is never destroyed).
NSIGHTKIT_DETAIL_ENTRY std::shared_ptr<module::HookSet> global_hook_set() noexcept;

/// A Hooked instance's own hook set: a copy gets a fresh (empty) set, a move takes the set
/// along (handles stay attached to the moved-to instance).
class InstanceHooks {
 public:
  InstanceHooks();
  InstanceHooks(InstanceHooks const&) : InstanceHooks() {}
  InstanceHooks(InstanceHooks&&) noexcept = default;
  InstanceHooks& operator=(InstanceHooks const&) noexcept { return *this; }
  InstanceHooks& operator=(InstanceHooks&&) noexcept = default;
  ~InstanceHooks() = default;

  [[nodiscard]] module::HookSet* get() const noexcept { return set_.get(); }

  /// The set, recreated for a moved-from instance (not concurrently with calls on it).
  std::shared_ptr<module::HookSet> const& shared();

 private:
  std::shared_ptr<module::HookSet> set_;
};

#else  // NSIGHTKIT_DISABLE: hooks are never stored

inline module::HandleState add_hook(std::shared_ptr<module::HookSet> const& /*set*/,
                                    ModuleHook const& /*fn*/, bool /*post*/) noexcept {
  return {};
}
inline std::shared_ptr<module::HookSet> global_hook_set() noexcept { return {}; }

class InstanceHooks {
 public:
  [[nodiscard]] module::HookSet* get() const noexcept { return nullptr; }
  [[nodiscard]] std::shared_ptr<module::HookSet> shared() const noexcept { return {}; }
};

#endif  // NSIGHTKIT_ENABLED

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
