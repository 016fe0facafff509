// Internal: the out-of-line work of a module scope (detail/module/scope.hpp) — entering a module
// someone observes (paths, the default range, pre hooks) and leaving it (post hooks) — and the
// resolving part of current_module_path(). Included at the end of scope.hpp header-only, by
// src/nsightkit.cpp in the compiled mode (detail/compiled.hpp), with the path table (paths.hpp).
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/detail/module/paths.hpp>
#include <nsightkit/detail/module/scope.hpp>
#include <nsightkit/detail/thread.hpp>

#if !NSIGHTKIT_ENABLED
#error "detail/module/scope_impl.hpp must not be included when NSIGHTKIT_DISABLE is defined"
#endif

#include <atomic>
#include <exception>
#include <new>
#include <string_view>
#include <thread>

// Their declarations in the class say inline (header-only) and where they go (cold, or inlined into
// enter()): a definition that repeated them would make GCC warn.
NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::module {

inline ModuleInfo Scope::make_info(PathNode const& node, char const* path,
                                   bool unwinding) const noexcept {
  ModuleInfo info;
  info.name = std::string_view{node.name(), node.name_size};
  info.path = std::string_view{path, node.path_size};
  info.depth = node.depth;
  info.call_count = calls_;
  info.thread = std::this_thread::get_id();
  info.os_thread_id = os_thread_id();
  info.module = module_;
  info.unwinding = unwinding;
  return info;
}

NSIGHTKIT_DETAIL_ENTRY std::string_view current_path_slow(Frame* f) noexcept {
  PathNode const* n = f->node != nullptr ? f->node : resolve(f);
  char const* path = n != nullptr ? node_path(*n) : nullptr;
  return path != nullptr ? std::string_view{path, n->path_size} : std::string_view{};
}

void Scope::enter(char const* name, HookSet* hooks, void const* module, bool ranges,
                  unsigned mode) noexcept {
  enter_body(Name{name != nullptr ? name : "", std::string_view::npos, nullptr}, hooks, module,
             ranges, mode);
}

void Scope::enter_body(Name const& name, HookSet* hooks, void const* module, bool ranges,
                       unsigned mode) noexcept {
  // A tool or sink listens: keep paths from now on, this scope included.
  if ((mode & mode_tracking) == 0) start_tracking();
  owned_ = name.owned;
  frame_.name = name.text;
  frame_.node = nullptr;
  frame_.parent = current_frame;
  current_frame = &frame_;
  ops_ = nullptr;
  observed_ = false;
  if (ranges) {
    ops_ = registry().domain.load(std::memory_order_acquire);
    ::new (static_cast<void*>(&emitted_))
        Emitted(name.size == std::string_view::npos ? ops_->push(name.text)
                                                    : ops_->push_text(name.text, name.size));
  }
  // Instance hooks are looked up only while some instance has one.
  Registry const& reg = registry();
  bool const hooked =
      reg.global.count() != 0 || (reg.instance_hooks.load(std::memory_order_relaxed) != 0 &&
                                  hooks != nullptr && hooks->count() != 0);
  if (!hooked || running_hooks.depth != 0) return;
  PathNode const* node = resolve(&frame_);
  // Out of memory for the node or its path, or nested beyond the depth limit (no path of its
  // own): no hooks for this call.
  if (node == nullptr || beyond_depth_limit(frame_, *node)) return;
  char const* const path = node_path(*node);
  if (path == nullptr) return;
  calls_ = node->calls.fetch_add(1, std::memory_order_relaxed) + 1;
  hooks_ = hooks;
  module_ = module;
  uncaught_ = std::uncaught_exceptions();
  observed_ = true;
  ModuleInfo const info = make_info(*node, path, false);
  run_hooks(global_hooks_snapshot(), false, info);
  if (hooks_ != nullptr && hooks_->count() != 0) {
    auto const list = hooks_->snapshot();
    run_hooks(list.get(), false, info);
  }
}

void Scope::leave() noexcept {
  if (observed_) {
    PathNode const& node = *frame_.node;
    ModuleInfo const info = make_info(node, node.path.load(std::memory_order_acquire),
                                      std::uncaught_exceptions() > uncaught_);
    run_hooks(global_hooks_snapshot(), true, info);
    if (hooks_ != nullptr && hooks_->count() != 0) {
      auto const list = hooks_->snapshot();
      run_hooks(list.get(), true, info);
    }
  }
  if (ops_ != nullptr) ops_->pop(emitted_);
  current_frame = frame_.parent;
  if (owned_ != nullptr) delete[] owned_;
}

}  // namespace detail::module
NSIGHTKIT_DETAIL_END_NAMESPACE
