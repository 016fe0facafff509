// Internal: the emit engine's body — one event to NVTX (when a tool handles this linkage unit's
// calls) and to nsightkit's in-process sinks (when one is registered). Header-only, detail/emit.hpp
// includes it and instantiates it per domain type; in the compiled mode (detail/compiled.hpp) only
// src/nsightkit.cpp includes it (through detail/emit_impl.hpp), so no other translation unit
// includes NVTX, whose headers generate NVTX's initialisation code in every translation unit that
// includes them.
#pragma once

#include <nsightkit/attributes.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/detail/emit_types.hpp>

#if !NSIGHTKIT_ENABLED
#error "nsightkit/detail/emit_engine.hpp must not be included when NSIGHTKIT_DISABLE is defined"
#endif

#include <nsightkit/detail/nvtx.hpp>
#include <nsightkit/detail/sinks.hpp>
#include <nsightkit/detail/thread.hpp>

#include <cstddef>
#include <cstring>
#include <string_view>

#if NSIGHTKIT_HAS_CUDA
#include <driver_types.h>
#include <nvtx3/nvToolsExtCudaRt.h>
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {

/// Marks the calling thread's NVTX calls as already given to the sinks (sinks_have_it) while it
/// lives, when `on`.
class SinksHaveIt {
 public:
  explicit SinksHaveIt(bool on) noexcept : on_{on} {
    if (on_) sinks_have_it = true;
  }
  ~SinksHaveIt() {
    if (on_) sinks_have_it = false;
  }
  SinksHaveIt(SinksHaveIt const&) = delete;
  SinksHaveIt& operator=(SinksHaveIt const&) = delete;

 private:
  bool on_;
};

/// Emits one event. `domain()` yields the domain's NvtxDomain and `handle(d)` the registered
/// string for `text` in it (null for a plain message); both are called only when a tool listens.
/// `domain_name` is what the sinks see; `len` is the length of `text`, or -1 to measure it.
template <Op op, class DomainFn, class HandleFn>
inline Emitted emit_core(DomainFn&& domain, char const* domain_name, Attributes const& a,
                         char const* text, std::size_t len, HandleFn&& handle) noexcept {
  Emitted r;
  bool const to_sinks = sinks_active();
  // The report's own tool would ignore the call (sinks_have_it): skip NVTX's whole round trip.
  if (nvtx_listening_any() && !(to_sinks && nvtx_push_state.load(std::memory_order_relaxed) ==
                                                NvtxPushState::report_tool)) {
    NvtxDomain& d = domain();
    nvtxEventAttributes_t e = event_attributes(d, a);
    set_message(e, handle(d), text);
    SinksHaveIt const mark{to_sinks};
    if constexpr (op == Op::push) {
      nvtxDomainRangePushEx(d.handle, &e);
    } else if constexpr (op == Op::start) {
      r.nvtx_id = nvtxDomainRangeStartEx(d.handle, &e);
    } else {
      nvtxDomainMarkEx(d.handle, &e);
    }
    r.nvtx = true;
  }
  if (to_sinks) {
    RangeBegin const b{
        domain_name, std::string_view{text, len == std::size_t(-1) ? std::strlen(text) : len}, &a};
    if constexpr (op == Op::push) {
      for_each_sink([&](RangeSink& s) { s.on_push(b); });
    } else if constexpr (op == Op::start) {
      r.sink_id = next_sink_range_id();
      for_each_sink([&](RangeSink& s) { s.on_start(r.sink_id, b); });
    } else {
      for_each_sink([&](RangeSink& s) { s.on_mark(b); });
    }
    r.sinks = true;
  }
  return r;
}

/// Ends a push/pop range where its beginning went.
template <class DomainFn>
inline void end_push_core(DomainFn&& domain, char const* domain_name, Emitted const& e) noexcept {
  if (e.nvtx) {
    SinksHaveIt const mark{e.sinks};
    nvtxDomainRangePop(domain().handle);
  }
  if (e.sinks) for_each_sink([domain_name](RangeSink& s) { s.on_pop(domain_name); });
}

/// Ends a start/end range where its beginning went.
template <class DomainFn>
inline void end_start_core(DomainFn&& domain, Emitted const& e) noexcept {
  if (e.nvtx) {
    SinksHaveIt const mark{e.sinks};
    nvtxDomainRangeEnd(domain().handle, e.nvtx_id);
  }
  if (e.sinks) for_each_sink([&](RangeSink& s) { s.on_end(e.sink_id); });
}

/// Names the calling OS thread for the tools and the sinks.
NSIGHTKIT_DETAIL_ENTRY void emit_thread_name(char const* name) noexcept {
  if (name == nullptr) return;
  if (nvtx_listening_any()) {
    SinksHaveIt const mark{sinks_active()};
    nvtxNameOsThreadA(os_thread_id(), name);
  }
  if (sinks_active()) for_each_sink([name](RangeSink& s) { s.on_thread_name(name); });
}

#if NSIGHTKIT_HAS_CUDA
/// Names a CUDA stream for the tools.
NSIGHTKIT_DETAIL_ENTRY void emit_stream_name(cudaStream_t stream, char const* name) noexcept {
  if (name == nullptr) return;
  bool const to_sinks = sinks_active();
  if (nvtx_listening_any()) {
    SinksHaveIt const mark{to_sinks};
    nvtxNameCudaStreamA(stream, name);
  }
  if (to_sinks) for_each_sink([&](RangeSink& s) { s.on_stream_name(stream, name); });
}

/// Names a CUDA device (by ordinal) for the tools.
NSIGHTKIT_DETAIL_ENTRY void emit_device_name(int device, char const* name) noexcept {
  if (name != nullptr && nvtx_listening_any()) nvtxNameCudaDeviceA(device, name);
}
#endif

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
