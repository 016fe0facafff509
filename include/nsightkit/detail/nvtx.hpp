// Internal: the bridge from nsightkit to NVTX (only included when instrumentation is enabled).
//
// - "Is a tool listening?" is answered by the NVTX instance of this linkage unit itself: after
//   initialisation, NVTX sets the function pointer of every call no tool handles to null, and a
//   push through a null pointer is a no-op. So a null push pointer means a push would reach no
//   one; nsightkit then skips formatting, string registration and the call itself. The answer is
//   read once, after initialisation, and kept in an atomic flag (see nvtx_push_state).
// - Strings are registered once per domain and content (a registered string lets the tool skip
//   copying the text and lets `nsys --capture-range=nvtx -p name@domain` match it).
#pragma once

#include <nsightkit/attributes.hpp>
#include <nsightkit/config.hpp>

#if !NSIGHTKIT_ENABLED
#error "nsightkit/detail/nvtx.hpp must not be included when NSIGHTKIT_DISABLE is defined"
#endif

#include <nvtx3/nvtx3.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#if !defined(NVTX_VERSION) || NVTX_VERSION != 3
#error "nsightkit requires NVTX v3 (nvtx3/nvtx3.hpp from the CUDA toolkit or NVIDIA/NVTX)"
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {

/// The nvtx3 domain tag for an nsightkit domain tag.
template <class D>
struct NvtxDomainOf {
  using type = D;
};
template <>
struct NvtxDomainOf<GlobalDomain> {
  using type = ::nvtx3::v1::domain::global;
};

/// NVTX handle of domain D (null for the global domain). Creating a named domain initialises
/// NVTX, which attaches any tool.
template <class D>
inline nvtxDomainHandle_t domain_handle() noexcept {
  return ::nvtx3::v1::domain::get<typename NvtxDomainOf<D>::type>();
}

/// Whether a tool handles pushes in this linkage unit, as last resolved: 0 = not yet known,
/// 1 = no (NVTX nulled the push pointer at initialisation), 2 = yes. nsightkit answers the hot
/// "is anyone listening?" question from this flag rather than from NVTX's function pointer: NVTX
/// writes its pointers with plain stores while it initialises, so reading one from another thread
/// at that moment is a data race (ThreadSanitizer reports it); the flag is written only after
/// initialisation has finished, under a thread-safe static.
inline std::atomic<unsigned char> nvtx_push_state{0};

/// Runs NVTX's one-time initialisation (tool attach) in this linkage unit, once, and publishes
/// whether pushes reach a tool. Every thread that has not yet seen the flag waits here until the
/// initialisation is complete, so none reads NVTX's pointers while they are being written.
NSIGHTKIT_DETAIL_NOINLINE inline bool nvtx_resolve_listening() noexcept {
  static bool const listening = [] {
    nvtxInitialize(nullptr);
    return NVTX_VERSIONED_IDENTIFIER(nvtxGlobals).nvtxDomainRangePushEx_impl_fnptr != nullptr;
  }();
  nvtx_push_state.store(listening ? 2 : 1, std::memory_order_release);
  return listening;
}

/// True when an NVTX tool handles pushes in this linkage unit. The common no-tool case is one
/// load and one branch; the first call initialises NVTX (which attaches a tool, if any) before
/// answering, and a named domain is created before its first use.
template <class D>
inline bool nvtx_listening() noexcept {
  auto const state = nvtx_push_state.load(std::memory_order_acquire);
  if (state == 1) return false;
  if (state == 0 && !nvtx_resolve_listening()) return false;
  if constexpr (!std::is_same_v<D, GlobalDomain>) {
    (void)domain_handle<D>();  // after initialisation, so creating it races with nothing
  }
  return true;
}

/// Per-domain table of registered strings, keyed by content. Bounded: past `capacity` distinct
/// strings the caller falls back to plain (unregistered) messages, so names built at run time
/// cannot grow the tool's string table without limit.
template <class D>
class StringRegistry {
 public:
  static constexpr std::size_t capacity = 4096;

  static StringRegistry& instance() noexcept {
    // Leaked on purpose: handles are used until the very end of the process.
    static StringRegistry* const r = new StringRegistry{};
    return *r;
  }

  /// The handle for `text`, registering it on first sight; null when the table is full.
  nvtxStringHandle_t get(char const* text) noexcept {
    std::lock_guard<std::mutex> lock{mutex_};
    NSIGHTKIT_DETAIL_TRY {
      auto it = table_.find(text);
      if (it != table_.end()) return it->second;
      if (table_.size() >= capacity) return nullptr;
      nvtxStringHandle_t h = nvtxDomainRegisterStringA(domain_handle<D>(), text);
      table_.emplace(text, h);
      return h;
    }
    NSIGHTKIT_DETAIL_CATCH(...) { return nullptr; }
    return nullptr;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, nvtxStringHandle_t> table_;
};

/// Registered handle for `text` through a small per-thread cache. The cache is keyed by address
/// but checks the content on every hit, so a reused buffer with new text is never misnamed.
template <class D>
inline nvtxStringHandle_t registered_string(char const* text) noexcept {
  struct Entry {
    char const* key{nullptr};
    std::string content;
    nvtxStringHandle_t handle{nullptr};
  };
  static constexpr std::size_t slots = 64;
  thread_local std::array<Entry, slots> cache{};
  auto const slot = (reinterpret_cast<std::uintptr_t>(text) >> 3u) % slots;
  Entry& e = cache[slot];
  if (e.key == text && e.handle != nullptr && std::strcmp(e.content.c_str(), text) == 0) {
    return e.handle;
  }
  nvtxStringHandle_t h = StringRegistry<D>::instance().get(text);
  if (h != nullptr) {
    NSIGHTKIT_DETAIL_TRY {
      e.content.assign(text);
      e.key = text;
      e.handle = h;
    }
    NSIGHTKIT_DETAIL_CATCH(...) { e.key = nullptr; }
  }
  return h;
}

/// Names category `c` in domain D the first time it is seen (first name wins).
template <class D>
inline void name_category_once(Category c) noexcept {
  if (c.name() == nullptr) return;
  static constexpr std::uint32_t fast = 256;
  static std::array<std::atomic<bool>, fast> named{};
  if (c.id() < fast) {
    if (named[c.id()].load(std::memory_order_acquire)) return;
    if (named[c.id()].exchange(true, std::memory_order_acq_rel)) return;
    nvtxDomainNameCategoryA(domain_handle<D>(), c.id(), c.name());
    return;
  }
  static std::mutex mutex;
  static std::unordered_set<std::uint32_t>* const seen = new std::unordered_set<std::uint32_t>{};
  std::lock_guard<std::mutex> lock{mutex};
  NSIGHTKIT_DETAIL_TRY {
    if (!seen->insert(c.id()).second) return;
  }
  NSIGHTKIT_DETAIL_CATCH(...) { return; }
  nvtxDomainNameCategoryA(domain_handle<D>(), c.id(), c.name());
}

/// NVTX event attributes for `a` without a message (category named on first use).
template <class D>
inline nvtxEventAttributes_t event_attributes(Attributes const& a) noexcept {
  nvtxEventAttributes_t e{};
  e.version = NVTX_VERSION;
  e.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  if (a.has_color()) {
    e.colorType = NVTX_COLOR_ARGB;
    e.color = a.color().value();
  }
  if (a.has_category()) {
    name_category_once<D>(a.category());
    e.category = a.category().id();
  }
  Payload const p = a.payload();
  switch (p.kind()) {
    case PayloadKind::int64:
      e.payloadType = NVTX_PAYLOAD_TYPE_INT64;
      e.payload.llValue = static_cast<long long>(p.as_int64());
      break;
    case PayloadKind::uint64:
      e.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
      e.payload.ullValue = static_cast<unsigned long long>(p.as_uint64());
      break;
    case PayloadKind::floating:
      e.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
      e.payload.dValue = p.as_double();
      break;
    case PayloadKind::none: break;
  }
  return e;
}

/// Sets a registered message when `h` is non-null, else the plain text.
inline void set_message(nvtxEventAttributes_t& e, nvtxStringHandle_t h, char const* text) noexcept {
  if (h != nullptr) {
    e.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    e.message.registered = h;
  } else {
    e.messageType = NVTX_MESSAGE_TYPE_ASCII;
    e.message.ascii = text;
  }
}

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
