// Internal: the compiled mode's definitions of the emit engine's out-of-line entry points
// (declared in detail/emit.hpp). Included only by src/nsightkit.cpp, the one translation unit of
// the program that includes NVTX.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/compiled.hpp>

#if !NSIGHTKIT_DETAIL_COMPILED
#error "nsightkit/detail/emit_impl.hpp is the compiled mode's (define NSIGHTKIT_COMPILED)"
#endif

#include <nsightkit/detail/emit.hpp>
#include <nsightkit/detail/emit_engine.hpp>
#include <nsightkit/detail/fmt_format.hpp>

#include <mutex>
#include <new>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {

/// The NVTX state of a compiled-mode domain, made on first use (after NVTX's initialisation).
inline NvtxDomain& nvtx_domain_of(DomainSlot& slot) noexcept {
  if (void* d = slot.nvtx.load(std::memory_order_acquire)) return *static_cast<NvtxDomain*>(d);
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock{mutex};
  if (void* d = slot.nvtx.load(std::memory_order_relaxed)) return *static_cast<NvtxDomain*>(d);
  // Leaked on purpose, like the header-only mode's: handles are used until the process ends.
  auto* d =
      new NvtxDomain{slot.global ? nvtxDomainHandle_t{nullptr} : nvtxDomainCreateA(slot.name)};
  slot.nvtx.store(d, std::memory_order_release);
  return *d;
}

bool resolve_nvtx_listening() noexcept { return nvtx_listening_any(); }

template <Op op>
inline Emitted emit_out_as(DomainSlot& slot, Attributes const& a, char const* text, std::size_t len,
                           NameKind kind, std::atomic<void*>* site) noexcept {
  auto domain = [&slot]() -> NvtxDomain& { return nvtx_domain_of(slot); };
  return emit_core<op>(domain, slot.name, a, text, len, [&](NvtxDomain& d) -> nvtxStringHandle_t {
    switch (kind) {
      case NameKind::registered: return registered_string(d, text);
      case NameKind::site: {
        // A site emits in one domain only, so its one handle is that domain's. Two threads may
        // both register it on first use: either handle names the same text.
        if (void* h = site->load(std::memory_order_acquire))
          return static_cast<nvtxStringHandle_t>(h);
        nvtxStringHandle_t const h = nvtxDomainRegisterStringA(d.handle, text);
        site->store(h, std::memory_order_release);
        return h;
      }
      case NameKind::plain: break;
    }
    return nullptr;
  });
}

Emitted emit_out(DomainSlot& domain, Op op, Attributes const& a, char const* text, std::size_t len,
                 NameKind kind, std::atomic<void*>* site) noexcept {
  switch (op) {
    case Op::push: return emit_out_as<Op::push>(domain, a, text, len, kind, site);
    case Op::start: return emit_out_as<Op::start>(domain, a, text, len, kind, site);
    case Op::mark: break;
  }
  return emit_out_as<Op::mark>(domain, a, text, len, kind, site);
}

Emitted emit_formatted_out(DomainSlot& domain, Op op, Attributes const& a, fmt::string_view f,
                           fmt::format_args args) noexcept {
  fmt::memory_buffer buf;
  format_name_to(buf, f, args);
  if (buf.size() == 0) return {};
  return emit_out(domain, op, a, buf.data(), buf.size() - 1, NameKind::plain, nullptr);
}

void end_out(DomainSlot& domain, Op op, Emitted const& e) noexcept {
  auto nvtx = [&domain]() -> NvtxDomain& { return nvtx_domain_of(domain); };
  if (op == Op::push) {
    end_push_core(nvtx, domain.name, e);
  } else {
    end_start_core(nvtx, e);
  }
}

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
