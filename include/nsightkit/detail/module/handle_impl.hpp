// Internal: HookHandle's members (module.hpp). Enabled, they move, reset and remove the hook's
// shared_ptrs: in the compiled mode (detail/compiled.hpp) src/nsightkit.cpp defines them once, so
// that a translation unit that includes module.hpp instantiates none of that; header-only, and
// disabled (where they do nothing and must stay inline: a disabled program calls nothing),
// module.hpp includes them.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/module.hpp>

#include <utility>

#if NSIGHTKIT_DETAIL_COMPILED && NSIGHTKIT_ENABLED
#define NSIGHTKIT_DETAIL_HANDLE_MEMBER
#else
#define NSIGHTKIT_DETAIL_HANDLE_MEMBER inline
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

NSIGHTKIT_DETAIL_HANDLE_MEMBER HookHandle::HookHandle(HookHandle&& other) noexcept
#if NSIGHTKIT_ENABLED
    : entry_{std::move(other.entry_)},
      set_{std::move(other.set_)}
#endif
{
#if !NSIGHTKIT_ENABLED
  (void)other;
#endif
}

NSIGHTKIT_DETAIL_HANDLE_MEMBER HookHandle& HookHandle::operator=(HookHandle&& other) noexcept {
  if (this != &other) {
    remove();
#if NSIGHTKIT_ENABLED
    entry_ = std::move(other.entry_);
    set_ = std::move(other.set_);
#endif
  }
  return *this;
}

NSIGHTKIT_DETAIL_HANDLE_MEMBER HookHandle::~HookHandle() { remove(); }

NSIGHTKIT_DETAIL_HANDLE_MEMBER void HookHandle::remove() noexcept {
#if NSIGHTKIT_ENABLED
  if (entry_ && set_) detail::module::remove_hook(*set_, entry_);
  entry_.reset();
  set_.reset();
#endif
}

NSIGHTKIT_DETAIL_HANDLE_MEMBER void HookHandle::release() noexcept {
#if NSIGHTKIT_ENABLED
  entry_.reset();
  set_.reset();
#endif
}

NSIGHTKIT_DETAIL_END_NAMESPACE

#undef NSIGHTKIT_DETAIL_HANDLE_MEMBER
