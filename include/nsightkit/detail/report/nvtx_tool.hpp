// Internal: the report as an NVTX tool. NVTX hands a tool the function tables of every module
// (executable, shared library, Python extension) that carries NVTX; these callbacks turn the ranges,
// marks and resource names of any code in the process into the report's own range events (the
// Sink of record.hpp), exactly as nsightkit's own ranges arrive through detail/sinks.hpp. An event
// nsightkit's emit engine also gives the sinks itself (sinks_have_it) is ignored here, so each
// range is counted once whichever way it comes.
//
// Handles the tool gives out point at its own interned names: a registered string or a domain
// costs no lookup per range. Both live as long as the process (NVTX has no unregister).
#pragma once

#include <nsightkit/attributes.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/detail/emit_types.hpp>
#include <nsightkit/detail/nvtx_injection.hpp>
#include <nsightkit/detail/report/record.hpp>
#include <nsightkit/detail/report/state.hpp>
#include <nsightkit/detail/sinks.hpp>
#include <nsightkit/detail/thread.hpp>

#if !NSIGHTKIT_ENABLED
#error                                                                                             \
    "nsightkit/detail/report/nvtx_tool.hpp must not be included when NSIGHTKIT_DISABLE is defined"
#endif

#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report::nvtx_tool {

/// A domain as the tool knows it; its address is the handle the program holds.
struct ToolDomain {
  std::string name;
};

/// A registered string; its address is the handle the program holds.
struct ToolString {
  std::string text;
};

/// Registered strings kept at most: a program that registers names built at run time cannot grow
/// the table without bound; later registrations share one handle of this text.
inline constexpr std::size_t max_strings = std::size_t{1} << 20;
inline constexpr char const too_many_strings[] = "(too many registered strings)";

/// The tool's names: domains and registered strings, interned by text. Leaked on purpose (handles
/// are used until the very end of the process).
struct Names {
  std::mutex mutex;
  std::unordered_map<std::string, std::unique_ptr<ToolDomain>> domains;
  std::unordered_map<std::string, ToolString*> strings;
  std::deque<ToolString> string_store;
  ToolString overflow{too_many_strings};
  ToolDomain global{""};  // NVTX's unnamed domain: the null handle
};

/// The process's names (default visibility: one table for every library that embeds nsightkit).
NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<Names*> names_ptr{nullptr};

inline Names& names() {
  Names* n = names_ptr.load(std::memory_order_acquire);
  if (n != nullptr) return *n;
  static std::mutex create;
  std::lock_guard<std::mutex> lock{create};
  n = names_ptr.load(std::memory_order_acquire);
  if (n == nullptr) {
    n = new Names{};
    names_ptr.store(n, std::memory_order_release);
  }
  return *n;
}

/// The name of domain handle `d` ("" for the global domain).
inline char const* domain_name(nvtxDomainHandle_t d) noexcept {
  return d == nullptr ? "" : reinterpret_cast<ToolDomain const*>(d)->name.c_str();
}

/// UTF-8 of a wide string (UTF-32 where wchar_t is 32 bits, UTF-16 elsewhere), invalid code
/// points replaced by U+FFFD.
inline void append_utf8(std::string& out, wchar_t const* w) {
  if (w == nullptr) return;
  for (; *w != 0; ++w) {
    auto c = static_cast<std::uint32_t>(*w);
    if constexpr (sizeof(wchar_t) == 2) {
      if (c >= 0xD800 && c < 0xDC00 && w[1] >= 0xDC00 && w[1] < 0xE000) {
        c = 0x10000 + ((c - 0xD800) << 10) + (static_cast<std::uint32_t>(w[1]) - 0xDC00);
        ++w;
      }
    }
    if (c > 0x10FFFF || (c >= 0xD800 && c < 0xE000)) c = 0xFFFD;
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
}

/// A wide string as UTF-8 in a per-thread buffer (valid until the thread's next call).
inline std::string_view narrow(wchar_t const* w) {
  thread_local std::string buf;
  buf.clear();
  append_utf8(buf, w);
  return buf;
}

/// The state of the report when it records, else null: the one check every callback makes.
inline State* recording() noexcept {
  State* s = state();
  return s != nullptr && s->recording.load(std::memory_order_relaxed) ? s : nullptr;
}

/// nsightkit's attributes of an NVTX event (color, category, payload; the message is separate).
inline Attributes attributes_of(nvtxEventAttributes_t const* e) noexcept {
  if (e == nullptr) return Attributes{};
  Payload p;
  switch (e->payloadType) {
    case NVTX_PAYLOAD_TYPE_INT64: p = Payload{static_cast<std::int64_t>(e->payload.llValue)}; break;
    case NVTX_PAYLOAD_TYPE_INT32: p = Payload{static_cast<std::int64_t>(e->payload.iValue)}; break;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
      p = Payload{static_cast<std::uint64_t>(e->payload.ullValue)};
      break;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
      p = Payload{static_cast<std::uint64_t>(e->payload.uiValue)};
      break;
    case NVTX_PAYLOAD_TYPE_DOUBLE: p = Payload{e->payload.dValue}; break;
    case NVTX_PAYLOAD_TYPE_FLOAT: p = Payload{static_cast<double>(e->payload.fValue)}; break;
    default: break;
  }
  bool const colored = e->colorType == NVTX_COLOR_ARGB;
  Color const c{e->color};
  Category const k{e->category};
  if (colored && e->category != 0) return Attributes{c, k, p};
  if (colored) return Attributes{c, p};
  if (e->category != 0) return Attributes{k, p};
  return Attributes{p};
}

/// The message of an NVTX event as text (valid during the callback).
inline std::string_view message_of(nvtxEventAttributes_t const* e) {
  if (e == nullptr) return {};
  switch (e->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return e->message.ascii == nullptr ? std::string_view{} : std::string_view{e->message.ascii};
    case NVTX_MESSAGE_TYPE_UNICODE: return narrow(e->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return e->message.registered == nullptr
                 ? std::string_view{}
                 : std::string_view{
                       reinterpret_cast<ToolString const*>(e->message.registered)->text};
    default: return {};
  }
}

// ---- callbacks (signatures follow nvtxDetail/nvtxTypes.h) ----

inline int domain_push(nvtxDomainHandle_t d, nvtxEventAttributes_t const* e) {
  if (sinks_have_it) return 0;
  State* s = recording();
  if (s == nullptr) return 0;
  NSIGHTKIT_DETAIL_TRY {
    Attributes const a = attributes_of(e);
    s->sink.on_push(RangeBegin{domain_name(d), message_of(e), &a});
  }
  NSIGHTKIT_DETAIL_CATCH(...) {}
  return 0;
}

inline int domain_pop(nvtxDomainHandle_t d) {
  if (sinks_have_it) return 0;
  if (State* s = recording()) s->sink.on_pop(domain_name(d));
  return 0;
}

inline nvtxRangeId_t domain_start(nvtxDomainHandle_t d, nvtxEventAttributes_t const* e) {
  if (sinks_have_it) return 0;
  State* s = recording();
  if (s == nullptr) return 0;
  std::uint64_t const id = next_sink_range_id();
  NSIGHTKIT_DETAIL_TRY {
    Attributes const a = attributes_of(e);
    s->sink.on_start(id, RangeBegin{domain_name(d), message_of(e), &a});
  }
  NSIGHTKIT_DETAIL_CATCH(...) {}
  return id;
}

inline void domain_end(nvtxDomainHandle_t, nvtxRangeId_t id) {
  if (sinks_have_it || id == 0) return;
  if (State* s = recording()) s->sink.on_end(id);
}

inline void domain_mark(nvtxDomainHandle_t d, nvtxEventAttributes_t const* e) {
  if (sinks_have_it) return;
  State* s = recording();
  if (s == nullptr) return;
  NSIGHTKIT_DETAIL_TRY {
    Attributes const a = attributes_of(e);
    s->sink.on_mark(RangeBegin{domain_name(d), message_of(e), &a});
  }
  NSIGHTKIT_DETAIL_CATCH(...) {}
}

inline nvtxDomainHandle_t domain_create_text(std::string_view name) {
  NSIGHTKIT_DETAIL_TRY {
    Names& n = names();
    std::lock_guard<std::mutex> lock{n.mutex};
    auto& slot = n.domains[std::string{name}];
    if (slot == nullptr) slot = std::make_unique<ToolDomain>(ToolDomain{std::string{name}});
    return reinterpret_cast<nvtxDomainHandle_t>(slot.get());
  }
  NSIGHTKIT_DETAIL_CATCH(...) {}
  return nullptr;  // out of memory: the global domain's ranges then
}
inline nvtxDomainHandle_t domain_create(char const* name) {
  return domain_create_text(name == nullptr ? std::string_view{} : std::string_view{name});
}
inline nvtxDomainHandle_t domain_create_w(wchar_t const* name) {
  NSIGHTKIT_DETAIL_TRY { return domain_create_text(narrow(name)); }
  NSIGHTKIT_DETAIL_CATCH(...) {}
  return nullptr;
}
inline void domain_destroy(nvtxDomainHandle_t) {}  // handles stay valid: ranges may still end

inline nvtxStringHandle_t register_text(std::string_view text) {
  Names& n = names();
  NSIGHTKIT_DETAIL_TRY {
    std::lock_guard<std::mutex> lock{n.mutex};
    std::string key{text};
    auto it = n.strings.find(key);
    if (it != n.strings.end()) return reinterpret_cast<nvtxStringHandle_t>(it->second);
    if (n.string_store.size() >= max_strings)
      return reinterpret_cast<nvtxStringHandle_t>(&n.overflow);
    ToolString* t = &n.string_store.emplace_back(ToolString{key});
    n.strings.emplace(std::move(key), t);
    return reinterpret_cast<nvtxStringHandle_t>(t);
  }
  NSIGHTKIT_DETAIL_CATCH(...) {}
  return reinterpret_cast<nvtxStringHandle_t>(&n.overflow);
}
inline nvtxStringHandle_t register_string(nvtxDomainHandle_t, char const* text) {
  return register_text(text == nullptr ? std::string_view{} : std::string_view{text});
}
inline nvtxStringHandle_t register_string_w(nvtxDomainHandle_t, wchar_t const* text) {
  NSIGHTKIT_DETAIL_TRY { return register_text(narrow(text)); }
  NSIGHTKIT_DETAIL_CATCH(...) {}
  return reinterpret_cast<nvtxStringHandle_t>(&names().overflow);
}

inline void name_category(nvtxDomainHandle_t, std::uint32_t, char const*) {}
inline void name_category_w(nvtxDomainHandle_t, std::uint32_t, wchar_t const*) {}
inline void initialize(void const*) {}

/// Names thread `tid` (an OS thread id) for every output.
inline void name_thread_text(std::uint32_t tid, std::string_view name) {
  if (sinks_have_it) return;  // nsightkit's own naming already told the sinks
  if (State* s = state()) name_thread(*s, tid, name);
}
inline void name_thread_a(std::uint32_t tid, char const* name) {
  name_thread_text(tid, name == nullptr ? std::string_view{} : std::string_view{name});
}
inline void name_thread_w(std::uint32_t tid, wchar_t const* name) {
  NSIGHTKIT_DETAIL_TRY { name_thread_text(tid, narrow(name)); }
  NSIGHTKIT_DETAIL_CATCH(...) {}
}

/// Names a CUDA stream (a cudaStream_t or a CUstream: the same handle) for every output.
inline void name_stream_text(void const* stream, std::string_view name) {
  if (sinks_have_it) return;
  if (State* s = state()) name_stream(*s, stream, name);
}
inline void name_stream_a(void* stream, char const* name) {
  name_stream_text(stream, name == nullptr ? std::string_view{} : std::string_view{name});
}
inline void name_stream_w(void* stream, wchar_t const* name) {
  NSIGHTKIT_DETAIL_TRY { name_stream_text(stream, narrow(name)); }
  NSIGHTKIT_DETAIL_CATCH(...) {}
}

// The core calls without a domain are the global domain's; their plain-text forms carry only a
// message.
inline void mark_ex(nvtxEventAttributes_t const* e) { domain_mark(nullptr, e); }
template <class Char>
inline void mark_text(Char const* m) {
  nvtxEventAttributes_t const a = nvtx_message_only(m);
  domain_mark(nullptr, &a);
}
inline nvtxRangeId_t start_ex(nvtxEventAttributes_t const* e) { return domain_start(nullptr, e); }
template <class Char>
inline nvtxRangeId_t start_text(Char const* m) {
  nvtxEventAttributes_t const a = nvtx_message_only(m);
  return domain_start(nullptr, &a);
}
inline void end(nvtxRangeId_t id) { domain_end(nullptr, id); }
inline int push_ex(nvtxEventAttributes_t const* e) { return domain_push(nullptr, e); }
template <class Char>
inline int push_text(Char const* m) {
  nvtxEventAttributes_t const a = nvtx_message_only(m);
  return domain_push(nullptr, &a);
}
inline int pop() { return domain_pop(nullptr); }
inline void core_name_category(std::uint32_t, char const*) {}
inline void core_name_category_w(std::uint32_t, wchar_t const*) {}

/// Modules NVTX has handed the report (one per executable or library that carries NVTX).
NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<int> attached_modules{0};

/// The tool's entry point (InitializeInjectionNvtx2's contract): fills one module's function
/// tables with the callbacks above. 1 on success, 0 when the tables cannot be had.
inline int attach(NvtxGetExportTableFunc_t get_export_table) noexcept {
  NvtxModuleTables const t{get_export_table};
  if (!t.valid()) return 0;
  NSIGHTKIT_DETAIL_TRY { (void)names(); }  // before the first event, which may not allocate it
  NSIGHTKIT_DETAIL_CATCH(...) { return 0; }
  constexpr NvtxCallbackModule core = NVTX_CB_MODULE_CORE, core2 = NVTX_CB_MODULE_CORE2;
  t.install(core, NVTX_CBID_CORE_MarkEx, &mark_ex);
  t.install(core, NVTX_CBID_CORE_MarkA, &mark_text<char>);
  t.install(core, NVTX_CBID_CORE_MarkW, &mark_text<wchar_t>);
  t.install(core, NVTX_CBID_CORE_RangeStartEx, &start_ex);
  t.install(core, NVTX_CBID_CORE_RangeStartA, &start_text<char>);
  t.install(core, NVTX_CBID_CORE_RangeStartW, &start_text<wchar_t>);
  t.install(core, NVTX_CBID_CORE_RangeEnd, &end);
  t.install(core, NVTX_CBID_CORE_RangePushEx, &push_ex);
  t.install(core, NVTX_CBID_CORE_RangePushA, &push_text<char>);
  t.install(core, NVTX_CBID_CORE_RangePushW, &push_text<wchar_t>);
  t.install(core, NVTX_CBID_CORE_RangePop, &pop);
  t.install(core, NVTX_CBID_CORE_NameCategoryA, &core_name_category);
  t.install(core, NVTX_CBID_CORE_NameCategoryW, &core_name_category_w);
  t.install(core, NVTX_CBID_CORE_NameOsThreadA, &name_thread_a);
  t.install(core, NVTX_CBID_CORE_NameOsThreadW, &name_thread_w);
  t.install(core2, NVTX_CBID_CORE2_DomainMarkEx, &domain_mark);
  t.install(core2, NVTX_CBID_CORE2_DomainRangeStartEx, &domain_start);
  t.install(core2, NVTX_CBID_CORE2_DomainRangeEnd, &domain_end);
  t.install(core2, NVTX_CBID_CORE2_DomainRangePushEx, &domain_push);
  report_tool_push.store(reinterpret_cast<std::uintptr_t>(&domain_push), std::memory_order_release);
  t.install(core2, NVTX_CBID_CORE2_DomainRangePop, &domain_pop);
  t.install(core2, NVTX_CBID_CORE2_DomainNameCategoryA, &name_category);
  t.install(core2, NVTX_CBID_CORE2_DomainNameCategoryW, &name_category_w);
  t.install(core2, NVTX_CBID_CORE2_DomainRegisterStringA, &register_string);
  t.install(core2, NVTX_CBID_CORE2_DomainRegisterStringW, &register_string_w);
  t.install(core2, NVTX_CBID_CORE2_DomainCreateA, &domain_create);
  t.install(core2, NVTX_CBID_CORE2_DomainCreateW, &domain_create_w);
  t.install(core2, NVTX_CBID_CORE2_DomainDestroy, &domain_destroy);
  t.install(core2, NVTX_CBID_CORE2_Initialize, &initialize);
  t.install(NVTX_CB_MODULE_CUDART, NVTX_CBID_CUDART_NameCudaStreamA, &name_stream_a);
  t.install(NVTX_CB_MODULE_CUDART, NVTX_CBID_CUDART_NameCudaStreamW, &name_stream_w);
  t.install(NVTX_CB_MODULE_CUDA, NVTX_CBID_CUDA_NameCuStreamA, &name_stream_a);
  t.install(NVTX_CB_MODULE_CUDA, NVTX_CBID_CUDA_NameCuStreamW, &name_stream_w);
  attached_modules.fetch_add(1, std::memory_order_relaxed);
  return 1;
}

}  // namespace detail::report::nvtx_tool
NSIGHTKIT_DETAIL_END_NAMESPACE
