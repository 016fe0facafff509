// Internal: the NVTX tool behind nsightkit::testing::Recorder (testing.hpp). NVTX's static
// injection entry point (initialize, below) fills NVTX's function tables with these callbacks;
// each records one Event in the process-wide RecorderState while a Recorder is recording.
// Independent of NSIGHTKIT_DISABLE, like the Recorder.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/testing_types.hpp>

#include <nsightkit/detail/nvtx_injection.hpp>

#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace nsightkit {
namespace testing {
namespace detail {

struct DomainInfo {
  std::string name;
};
struct StringInfo {
  DomainInfo const* domain;
  std::string text;
};

/// The tool's process-wide state. Leaked on purpose: handles stay valid until the process ends.
struct RecorderState {
  std::mutex mutex;
  bool installed{false};
  std::atomic<bool> recording{false};
  bool owned{false};
  std::vector<Event> events;
  std::uint64_t sequence{0};
  std::uint64_t next_range_id{1};
  std::unordered_map<std::string, DomainInfo*> domains;
  std::vector<std::unique_ptr<StringInfo>> strings;  // registered strings, alive for the process
  std::unordered_map<std::uint64_t, std::string> open_start_ranges;  // id -> domain

  static RecorderState& get() {
    static RecorderState* const s = new RecorderState{};
    return *s;
  }
};

inline char const* domain_name(nvtxDomainHandle_t d) noexcept {
  return d == nullptr ? "" : reinterpret_cast<DomainInfo const*>(d)->name.c_str();
}

inline std::string narrow(wchar_t const* w) {
  std::string s;
  if (w == nullptr) return s;
  for (; *w != 0; ++w) s += (*w >= 0 && *w < 128) ? static_cast<char>(*w) : '?';
  return s;
}

/// Per-thread push depth per domain, for Event::depth.
inline int& depth_of(nvtxDomainHandle_t d) {
  thread_local std::unordered_map<void const*, int> depths;
  return depths[d];
}

inline void copy_attributes(Event& e, nvtxEventAttributes_t const* a) {
  if (a == nullptr) return;
  if (a->colorType == NVTX_COLOR_ARGB) e.color = a->color;
  e.category = a->category;
  using K = RecordedPayload::Kind;
  switch (a->payloadType) {
    case NVTX_PAYLOAD_TYPE_INT64:
      e.payload.kind = K::int64;
      e.payload.i = a->payload.llValue;
      break;
    case NVTX_PAYLOAD_TYPE_INT32:
      e.payload.kind = K::int64;
      e.payload.i = a->payload.iValue;
      break;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
      e.payload.kind = K::uint64;
      e.payload.u = a->payload.ullValue;
      break;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
      e.payload.kind = K::uint64;
      e.payload.u = a->payload.uiValue;
      break;
    case NVTX_PAYLOAD_TYPE_DOUBLE:
      e.payload.kind = K::floating;
      e.payload.d = a->payload.dValue;
      break;
    case NVTX_PAYLOAD_TYPE_FLOAT:
      e.payload.kind = K::floating;
      e.payload.d = static_cast<double>(a->payload.fValue);
      break;
    default: break;
  }
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      e.message = a->message.ascii == nullptr ? "" : a->message.ascii;
      break;
    case NVTX_MESSAGE_TYPE_UNICODE: e.message = narrow(a->message.unicode); break;
    case NVTX_MESSAGE_TYPE_REGISTERED:
      e.registered = true;
      if (a->message.registered != nullptr) {
        e.message = reinterpret_cast<StringInfo const*>(a->message.registered)->text;
      }
      break;
    default: break;
  }
}

/// Appends `e` (stamped with thread and sequence) while a Recorder records.
inline void record(Event e) noexcept {
  RecorderState& s = RecorderState::get();
  if (!s.recording.load(std::memory_order_acquire)) return;
  NSIGHTKIT_DETAIL_TRY {
    e.thread = std::this_thread::get_id();
    std::lock_guard<std::mutex> lock{s.mutex};
    if (!s.recording.load(std::memory_order_relaxed)) return;
    e.sequence = s.sequence++;
    s.events.push_back(std::move(e));
  }
  NSIGHTKIT_DETAIL_CATCH(...) {
    // Out of memory while recording a test: drop the event rather than crash the tool callback.
  }
}

inline Event make(EventKind k, nvtxDomainHandle_t d) {
  Event e;
  e.kind = k;
  e.domain = domain_name(d);
  return e;
}

// ---- NVTX callbacks (signatures follow nvtxDetail/nvtxTypes.h) ----

inline int cb_domain_push(nvtxDomainHandle_t d, nvtxEventAttributes_t const* a) {
  int& depth = depth_of(d);
  ++depth;
  Event e = make(EventKind::push, d);
  copy_attributes(e, a);
  e.depth = depth;
  record(std::move(e));
  return depth - 1;
}
inline int cb_domain_pop(nvtxDomainHandle_t d) {
  int& depth = depth_of(d);
  Event e = make(EventKind::pop, d);
  e.depth = depth;
  record(std::move(e));
  if (depth > 0) --depth;
  return depth;
}
inline nvtxRangeId_t cb_domain_start(nvtxDomainHandle_t d, nvtxEventAttributes_t const* a) {
  RecorderState& s = RecorderState::get();
  std::uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock{s.mutex};
    id = s.next_range_id++;
  }
  Event e = make(EventKind::start, d);
  copy_attributes(e, a);
  e.range_id = id;
  record(std::move(e));
  return id;
}
inline void cb_domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id) {
  Event e = make(EventKind::end, d);
  e.range_id = id;
  record(std::move(e));
}
inline void cb_domain_mark(nvtxDomainHandle_t d, nvtxEventAttributes_t const* a) {
  Event e = make(EventKind::mark, d);
  copy_attributes(e, a);
  record(std::move(e));
}
inline void cb_domain_name_category(nvtxDomainHandle_t d, std::uint32_t id, char const* name) {
  Event e = make(EventKind::name_category, d);
  e.object = id;
  e.message = name == nullptr ? "" : name;
  record(std::move(e));
}
inline void cb_domain_name_category_w(nvtxDomainHandle_t d, std::uint32_t id, wchar_t const* name) {
  Event e = make(EventKind::name_category, d);
  e.object = id;
  e.message = narrow(name);
  record(std::move(e));
}
inline nvtxStringHandle_t cb_register_string_text(nvtxDomainHandle_t d, std::string text) {
  RecorderState& s = RecorderState::get();
  StringInfo* info = nullptr;
  {
    std::lock_guard<std::mutex> lock{s.mutex};
    s.strings.push_back(
        std::make_unique<StringInfo>(StringInfo{reinterpret_cast<DomainInfo const*>(d), text}));
    info = s.strings.back().get();
  }
  Event e = make(EventKind::register_string, d);
  e.message = std::move(text);
  record(std::move(e));
  return reinterpret_cast<nvtxStringHandle_t>(info);
}
inline nvtxStringHandle_t cb_register_string(nvtxDomainHandle_t d, char const* s) {
  return cb_register_string_text(d, s == nullptr ? "" : s);
}
inline nvtxStringHandle_t cb_register_string_w(nvtxDomainHandle_t d, wchar_t const* s) {
  return cb_register_string_text(d, narrow(s));
}
inline nvtxDomainHandle_t cb_domain_create_text(std::string name) {
  RecorderState& s = RecorderState::get();
  DomainInfo* info = nullptr;
  {
    std::lock_guard<std::mutex> lock{s.mutex};
    auto& slot = s.domains[name];
    if (slot == nullptr) slot = new DomainInfo{name};
    info = slot;
  }
  auto h = reinterpret_cast<nvtxDomainHandle_t>(info);
  record(make(EventKind::domain_create, h));
  return h;
}
inline nvtxDomainHandle_t cb_domain_create(char const* name) {
  return cb_domain_create_text(name == nullptr ? "" : name);
}
inline nvtxDomainHandle_t cb_domain_create_w(wchar_t const* name) {
  return cb_domain_create_text(narrow(name));
}
inline void cb_domain_destroy(nvtxDomainHandle_t d) { record(make(EventKind::domain_destroy, d)); }
inline void cb_initialize(void const*) {}

// Core (non-domain) calls are the global domain's.
inline void cb_mark_ex(nvtxEventAttributes_t const* a) { cb_domain_mark(nullptr, a); }
inline void cb_mark_a(char const* m) {
  nvtxEventAttributes_t const a = ::nsightkit::detail::nvtx_message_only(m);
  cb_domain_mark(nullptr, &a);
}
inline void cb_mark_w(wchar_t const* m) {
  nvtxEventAttributes_t const a = ::nsightkit::detail::nvtx_message_only(m);
  cb_domain_mark(nullptr, &a);
}
inline nvtxRangeId_t cb_start_ex(nvtxEventAttributes_t const* a) {
  return cb_domain_start(nullptr, a);
}
inline nvtxRangeId_t cb_start_a(char const* m) {
  nvtxEventAttributes_t const a = ::nsightkit::detail::nvtx_message_only(m);
  return cb_domain_start(nullptr, &a);
}
inline nvtxRangeId_t cb_start_w(wchar_t const* m) {
  nvtxEventAttributes_t const a = ::nsightkit::detail::nvtx_message_only(m);
  return cb_domain_start(nullptr, &a);
}
inline void cb_end(nvtxRangeId_t id) { cb_domain_end(nullptr, id); }
inline int cb_push_ex(nvtxEventAttributes_t const* a) { return cb_domain_push(nullptr, a); }
inline int cb_push_a(char const* m) {
  nvtxEventAttributes_t const a = ::nsightkit::detail::nvtx_message_only(m);
  return cb_domain_push(nullptr, &a);
}
inline int cb_push_w(wchar_t const* m) {
  nvtxEventAttributes_t const a = ::nsightkit::detail::nvtx_message_only(m);
  return cb_domain_push(nullptr, &a);
}
inline int cb_pop() { return cb_domain_pop(nullptr); }
inline void cb_name_category(std::uint32_t id, char const* n) {
  cb_domain_name_category(nullptr, id, n);
}
inline void cb_name_category_w(std::uint32_t id, wchar_t const* n) {
  cb_domain_name_category_w(nullptr, id, n);
}
inline void named(EventKind k, std::uint64_t object, std::string name) {
  Event e = make(k, nullptr);
  e.object = object;
  e.message = std::move(name);
  record(std::move(e));
}
inline void cb_name_thread(std::uint32_t tid, char const* n) {
  named(EventKind::name_os_thread, tid, n == nullptr ? "" : n);
}
inline void cb_name_thread_w(std::uint32_t tid, wchar_t const* n) {
  named(EventKind::name_os_thread, tid, narrow(n));
}
// CUDA runtime naming; CUDA types are opaque pointers / ints here, so no CUDA header is needed.
inline void cb_name_cuda_device(int dev, char const* n) {
  named(EventKind::name_cuda_device, static_cast<std::uint64_t>(dev), n == nullptr ? "" : n);
}
inline void cb_name_cuda_device_w(int dev, wchar_t const* n) {
  named(EventKind::name_cuda_device, static_cast<std::uint64_t>(dev), narrow(n));
}
inline void cb_name_cuda_stream(void* stream, char const* n) {
  named(EventKind::name_cuda_stream, reinterpret_cast<std::uintptr_t>(stream),
        n == nullptr ? "" : n);
}
inline void cb_name_cuda_stream_w(void* stream, wchar_t const* n) {
  named(EventKind::name_cuda_stream, reinterpret_cast<std::uintptr_t>(stream), narrow(n));
}
inline void cb_name_cuda_event(void* event, char const* n) {
  named(EventKind::name_cuda_event, reinterpret_cast<std::uintptr_t>(event), n == nullptr ? "" : n);
}
inline void cb_name_cuda_event_w(void* event, wchar_t const* n) {
  named(EventKind::name_cuda_event, reinterpret_cast<std::uintptr_t>(event), narrow(n));
}

/// The injection entry point: fills NVTX's function tables with the callbacks above.
inline int initialize(NvtxGetExportTableFunc_t get_export_table) noexcept {
  ::nsightkit::detail::NvtxModuleTables const t{get_export_table};
  if (!t.valid()) return 0;
  t.install(NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_MarkEx, &cb_mark_ex);
  t.install(NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_MarkA, &cb_mark_a);
  t.install(NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_MarkW, &cb_mark_w);
  t.install(NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeStartEx, &cb_start_ex);
  t.install(NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeStartA, &cb_start_a);
  t.install(NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeStartW, &cb_start_w);
  t.install(NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeEnd, &cb_end);
  t.install(NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushEx, &cb_push_ex);
  t.install(NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushA, &cb_push_a);
  t.install(NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushW, &cb_push_w);
  t.install(NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePop, &cb_pop);
  t.install(NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_NameCategoryA, &cb_name_category);
  t.install(NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_NameCategoryW, &cb_name_category_w);
  t.install(NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_NameOsThreadA, &cb_name_thread);
  t.install(NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_NameOsThreadW, &cb_name_thread_w);
  t.install(NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainMarkEx, &cb_domain_mark);
  t.install(NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangeStartEx, &cb_domain_start);
  t.install(NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangeEnd, &cb_domain_end);
  t.install(NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePushEx, &cb_domain_push);
  t.install(NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePop, &cb_domain_pop);
  t.install(NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainNameCategoryA, &cb_domain_name_category);
  t.install(NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainNameCategoryW, &cb_domain_name_category_w);
  t.install(NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRegisterStringA, &cb_register_string);
  t.install(NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRegisterStringW, &cb_register_string_w);
  t.install(NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainCreateA, &cb_domain_create);
  t.install(NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainCreateW, &cb_domain_create_w);
  t.install(NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainDestroy, &cb_domain_destroy);
  t.install(NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_Initialize, &cb_initialize);
  t.install(NVTX_CB_MODULE_CUDART, NVTX_CBID_CUDART_NameCudaDeviceA, &cb_name_cuda_device);
  t.install(NVTX_CB_MODULE_CUDART, NVTX_CBID_CUDART_NameCudaDeviceW, &cb_name_cuda_device_w);
  t.install(NVTX_CB_MODULE_CUDART, NVTX_CBID_CUDART_NameCudaStreamA, &cb_name_cuda_stream);
  t.install(NVTX_CB_MODULE_CUDART, NVTX_CBID_CUDART_NameCudaStreamW, &cb_name_cuda_stream_w);
  t.install(NVTX_CB_MODULE_CUDART, NVTX_CBID_CUDART_NameCudaEventA, &cb_name_cuda_event);
  t.install(NVTX_CB_MODULE_CUDART, NVTX_CBID_CUDART_NameCudaEventW, &cb_name_cuda_event_w);
  RecorderState& s = RecorderState::get();
  std::lock_guard<std::mutex> lock{s.mutex};
  s.installed = true;
  return 1;
}

}  // namespace detail
}  // namespace testing
}  // namespace nsightkit
