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
#include <nsightkit/detail/emit_types.hpp>

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
#include <utility>

#if !defined(_WIN32)
#include <pthread.h>
#endif

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

/// Runs NVTX's one-time initialisation (tool attach) in this linkage unit, once, and publishes
/// whether pushes reach a tool (nvtx_push_state, emit_types.hpp). Every thread that has not yet
/// seen the flag waits here until the initialisation is complete, so none reads NVTX's pointers
/// while they are being written.
NSIGHTKIT_DETAIL_NOINLINE inline bool nvtx_resolve_listening() noexcept {
  static NvtxPushState const state = [] {
    nvtxInitialize(nullptr);
    auto const push = NVTX_VERSIONED_IDENTIFIER(nvtxGlobals).nvtxDomainRangePushEx_impl_fnptr;
    if (push == nullptr) return NvtxPushState::no_tool;
    std::uintptr_t const own = report_tool_push.load(std::memory_order_acquire);
    return own != 0 && reinterpret_cast<std::uintptr_t>(push) == own ? NvtxPushState::report_tool
                                                                     : NvtxPushState::tool;
  }();
  nvtx_push_state.store(state, std::memory_order_release);
  return state != NvtxPushState::no_tool;
}

/// True when an NVTX tool handles pushes in this linkage unit. The common no-tool case is one
/// load and one branch; the first call initialises NVTX (which attaches a tool, if any).
inline bool nvtx_listening_any() noexcept {
  auto const state = nvtx_push_state.load(std::memory_order_acquire);
  if (state == NvtxPushState::no_tool) return false;
  return state >= NvtxPushState::tool || nvtx_resolve_listening();
}

/// Per-domain table of registered strings, keyed by content. Bounded: past `capacity` distinct
/// strings the caller falls back to plain (unregistered) messages, so names built at run time
/// cannot grow the tool's string table without limit.
class StringRegistry {
 public:
  static constexpr std::size_t capacity = 4096;

  explicit StringRegistry(nvtxDomainHandle_t domain) noexcept : domain_{domain} {}

  /// The handle for `text`, registering it on first sight; null when the table is full.
  nvtxStringHandle_t get(char const* text) noexcept {
    std::lock_guard<std::mutex> lock{mutex_};
    NSIGHTKIT_DETAIL_TRY {
      auto it = table_.find(text);
      if (it != table_.end()) return it->second;
      if (table_.size() >= capacity) return nullptr;
      nvtxStringHandle_t h = nvtxDomainRegisterStringA(domain_, text);
      table_.emplace(text, h);
      return h;
    }
    NSIGHTKIT_DETAIL_CATCH(...) { return nullptr; }
    return nullptr;
  }

  /// Fork: held across it (nvtx_domains_fork_prepare()).
  void fork_lock() noexcept { mutex_.lock(); }
  void fork_unlock() noexcept { mutex_.unlock(); }

 private:
  nvtxDomainHandle_t domain_;
  std::mutex mutex_;
  std::unordered_map<std::string, nvtxStringHandle_t> table_;
};

/// The categories of one domain already named (first name wins).
class CategoryNames {
 public:
  /// True the first time `id` is claimed.
  bool claim(std::uint32_t id) noexcept {
    if (id < fast) {
      if (named_[id].load(std::memory_order_acquire)) return false;
      return !named_[id].exchange(true, std::memory_order_acq_rel);
    }
    std::lock_guard<std::mutex> lock{mutex_};
    NSIGHTKIT_DETAIL_TRY { return seen_.insert(id).second; }
    NSIGHTKIT_DETAIL_CATCH(...) { return false; }
    return false;
  }

  /// Fork: held across it (nvtx_domains_fork_prepare()).
  void fork_lock() noexcept { mutex_.lock(); }
  void fork_unlock() noexcept { mutex_.unlock(); }

 private:
  static constexpr std::uint32_t fast = 256;
  std::array<std::atomic<bool>, fast> named_{};
  std::mutex mutex_;
  std::unordered_set<std::uint32_t> seen_;
};

/// One nsightkit domain as NVTX knows it: its handle (null for the global domain), its registered
/// strings and its named categories. Created once per domain after NVTX's initialisation and
/// leaked on purpose: handles are used until the very end of the process.
struct NvtxDomain;
inline void nvtx_domains_add(NvtxDomain* d) noexcept;

struct NvtxDomain {
  explicit NvtxDomain(nvtxDomainHandle_t h) noexcept : handle{h}, strings{h} {
    nvtx_domains_add(this);
  }
  nvtxDomainHandle_t handle;
  StringRegistry strings;
  CategoryNames categories;
  NvtxDomain* next{nullptr};  // nvtx_domains
};

/// Every NvtxDomain of this linkage unit (they are never freed), for the fork handlers: a thread
/// that holds a domain's lock while another forks would leave it held in the child, whose next
/// range would then wait for it forever.
inline std::atomic<NvtxDomain*> nvtx_domains{nullptr};
/// The list as the prepare handler locked it (a domain added meanwhile is not held).
inline NvtxDomain* nvtx_domains_locked = nullptr;

inline void nvtx_domains_fork_prepare() noexcept {
  NvtxDomain* const head = nvtx_domains.load(std::memory_order_acquire);
  for (NvtxDomain* d = head; d != nullptr; d = d->next) {
    d->strings.fork_lock();  // before categories: the order get() and claim() never nest in
    d->categories.fork_lock();
  }
  nvtx_domains_locked = head;
}

inline void nvtx_domains_fork_release() noexcept {
  for (NvtxDomain* d = nvtx_domains_locked; d != nullptr; d = d->next) {
    d->categories.fork_unlock();
    d->strings.fork_unlock();
  }
  nvtx_domains_locked = nullptr;
}

inline void nvtx_domains_add(NvtxDomain* d) noexcept {
#if !defined(_WIN32)
  static bool const handlers =
      ::pthread_atfork(&nvtx_domains_fork_prepare, &nvtx_domains_fork_release,
                       &nvtx_domains_fork_release) == 0;
  (void)handlers;
#endif
  NvtxDomain* head = nvtx_domains.load(std::memory_order_relaxed);
  do {
    d->next = head;
  } while (!nvtx_domains.compare_exchange_weak(head, d, std::memory_order_release,
                                               std::memory_order_relaxed));
}

/// The NVTX state of domain D (call only after nvtx_listening_any() said yes).
template <class D>
inline NvtxDomain& nvtx_domain() noexcept {
  static NvtxDomain* const d = new NvtxDomain{domain_handle<D>()};
  return *d;
}

/// True when an NVTX tool handles pushes in this linkage unit (see nvtx_listening_any); a named
/// domain is created before its first use.
template <class D>
inline bool nvtx_listening() noexcept {
  if (!nvtx_listening_any()) return false;
  if constexpr (!std::is_same_v<D, GlobalDomain>) {
    (void)nvtx_domain<D>();  // after initialisation, so creating it races with nothing
  }
  return true;
}

/// One entry of registered_string()'s per-thread cache.
struct RegisteredStringEntry {
  NvtxDomain const* domain{nullptr};
  char const* key{nullptr};
  std::string content;
  nvtxStringHandle_t handle{nullptr};
};

/// Registered handle for `text` in domain `d` through a small per-thread cache. The cache is
/// keyed by domain and address but checks the content on every hit, so a reused buffer with new
/// text is never misnamed. Two entries per set, the set chosen by a multiplicative hash of both
/// addresses: string literals sit a few bytes apart, and ranges nested inside each other whose
/// names shared one direct-mapped slot evicted each other on every call (the registry's mutex and
/// a string copy per range).
inline nvtxStringHandle_t registered_string(NvtxDomain& d, char const* text) noexcept {
  using Entry = RegisteredStringEntry;     // a local class here crashes clang 14's parser in C++20
  static constexpr unsigned set_bits = 5;  // 32 sets of 2: 64 entries
  thread_local std::array<std::array<Entry, 2>, std::size_t{1} << set_bits> cache;
  std::uint64_t const mixed = (std::uint64_t{reinterpret_cast<std::uintptr_t>(text)} ^
                               (std::uint64_t{reinterpret_cast<std::uintptr_t>(&d)} << 17u)) *
                              0x9E3779B97F4A7C15ull;
  std::array<Entry, 2>& set = cache[static_cast<std::size_t>(mixed >> (64u - set_bits))];
  for (Entry const& e : set) {
    if (e.key == text && e.domain == &d && e.handle != nullptr &&
        std::strcmp(e.content.c_str(), text) == 0) {
      return e.handle;
    }
  }
  nvtxStringHandle_t h = d.strings.get(text);
  if (h != nullptr) {
    std::swap(set[0], set[1]);  // the older entry of the set goes; the newest is looked at first
    Entry& e = set[0];
    NSIGHTKIT_DETAIL_TRY {
      e.content.assign(text);
      e.key = text;
      e.domain = &d;
      e.handle = h;
    }
    NSIGHTKIT_DETAIL_CATCH(...) { e.key = nullptr; }
  }
  return h;
}

/// NVTX event attributes for `a` without a message (category named in `d` on first use).
inline nvtxEventAttributes_t event_attributes(NvtxDomain& d, Attributes const& a) noexcept {
  nvtxEventAttributes_t e{};
  e.version = NVTX_VERSION;
  e.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  if (a.has_color()) {
    e.colorType = NVTX_COLOR_ARGB;
    e.color = a.color().value();
  }
  if (a.has_category()) {
    Category const c = a.category();
    if (c.name() != nullptr && d.categories.claim(c.id())) {
      nvtxDomainNameCategoryA(d.handle, c.id(), c.name());
    }
    e.category = c.id();
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
