// Internal: HookHandle's members (module.hpp), over detail::module::HandleState (control.hpp).
// Enabled, they move, reset and remove the hook's shared_ptrs: in the compiled mode
// (detail/compiled.hpp) src/nsightkit.cpp defines them once, so that a translation unit that
// includes module.hpp instantiates none of that; header-only, and disabled (where they do nothing
// and must stay inline: a disabled program calls nothing), module.hpp includes them.
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
    : state_{std::move(other.state_)} {}

NSIGHTKIT_DETAIL_HANDLE_MEMBER HookHandle& HookHandle::operator=(HookHandle&& other) noexcept {
  if (this != &other) {
    remove();
    state_ = std::move(other.state_);
  }
  return *this;
}

NSIGHTKIT_DETAIL_HANDLE_MEMBER HookHandle::~HookHandle() { remove(); }

NSIGHTKIT_DETAIL_HANDLE_MEMBER void HookHandle::remove() noexcept { state_.remove(); }

NSIGHTKIT_DETAIL_HANDLE_MEMBER void HookHandle::release() noexcept { state_.release(); }

NSIGHTKIT_DETAIL_END_NAMESPACE

#undef NSIGHTKIT_DETAIL_HANDLE_MEMBER
