// Internal: the "cupti" GPU source — CUPTI's callback API notes every launch call (kernels,
// copies, memsets, graph launches, allocations, in the runtime and driver APIs, also the ones
// cuBLAS, cuDNN or NCCL make), its activity API records what ran on the GPU, and the attribution
// (attribution.hpp) joins the two by correlation id. Included by <nsightkit/cupti.hpp>.
//
// One CUPTI subscriber per process: under Nsight Compute or Nsight Systems (or a second
// subscriber) subscribing fails; the source then says why and the report uses CUDA events.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/cuda_driver.hpp>
#include <nsightkit/detail/cupti/attribution.hpp>
#include <nsightkit/detail/cupti/calls.hpp>
#include <nsightkit/detail/graph_state.hpp>
#include <nsightkit/detail/report/clock.hpp>
#include <nsightkit/detail/report/state.hpp>
#include <nsightkit/detail/thread.hpp>

#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED" for a CUPTI result.
inline std::string cupti_result_text(CUptiResult r) {
  char const* text = nullptr;
  (void)cuptiGetResultString(r, &text);
  return text != nullptr ? std::string{text} : "CUPTI error " + std::to_string(static_cast<int>(r));
}

inline CopyKind copy_kind(std::uint8_t k) noexcept {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return CopyKind::h2d;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return CopyKind::d2h;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return CopyKind::d2d;
    default: return CopyKind::other;
  }
}

class CuptiSource final : public AttributionSource {
 public:
  [[nodiscard]] char const* name() const noexcept override { return "cupti"; }

  /// Subscribes on first use; "" when CUPTI collects, else why not.
  [[nodiscard]] std::string unavailable() override {
    std::lock_guard<std::mutex> lock{start_mutex_};
    if (!tried_) {
      tried_ = true;
      why_ = start();
    }
    return why_;
  }

  void activate(bool on) override {
    std::lock_guard<std::mutex> lock{start_mutex_};
    if (!tried_ || !why_.empty() || on == active_) return;
    active_ = on;
    (void)cuptiEnableDomain(on ? 1u : 0u, subscriber_, CUPTI_CB_DOMAIN_RESOURCE);
    for (auto const& [domain, cbid] : enabled_)
      (void)cuptiEnableCallback(on ? 1u : 0u, subscriber_, domain, cbid);
    for (CUpti_ActivityKind k : kinds_)
      (void)(on ? cuptiActivityEnable(k) : cuptiActivityDisable(k));
  }

  /// Switches the callbacks alone while collection runs: bench_cupti's paired mode measures
  /// what they cost per launch against kernel activity alone, in one process.
  void watch_launches(bool on) {
    std::lock_guard<std::mutex> lock{start_mutex_};
    if (!tried_ || !why_.empty() || !active_) return;
    for (auto const& [domain, cbid] : enabled_)
      (void)cuptiEnableCallback(on ? 1u : 0u, subscriber_, domain, cbid);
  }

  /// Delivers every runtime API call to the graph observer (on), or only the calls the source
  /// needs (off); subscribes first if needed. Called when captures with diagnostics begin/end.
  void watch_apis(bool on) {
    if (!unavailable().empty()) return;
    std::lock_guard<std::mutex> lock{start_mutex_};
    if (on) {
      (void)cuptiEnableDomain(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API);
      (void)cuptiEnableDomain(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE);
      graph_watch.cupti.store(true, std::memory_order_release);
      return;
    }
    graph_watch.cupti.store(false, std::memory_order_release);
    (void)cuptiEnableDomain(0, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API);
    if (active_) {
      for (auto const& [domain, cbid] : enabled_) {
        if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
          (void)cuptiEnableCallback(1, subscriber_, domain, cbid);
      }
    }
  }

  /// The one CUPTI source of the process (default visibility: every library embedding
  /// nsightkit shares it; CUPTI takes one subscriber anyway). Leaked: CUPTI calls it until exit.
  static CuptiSource& instance();

 protected:
  void deliver() override {
    {
      std::lock_guard<std::mutex> lock{start_mutex_};
      if (!tried_ || !why_.empty()) return;
    }
    synchronize_contexts();
    (void)cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  }

 private:
  CuptiSource() = default;

  /// Subscribes and enables collection; "" on success, else the reason.
  std::string start() {
    if (char const* why = cuda_driver::api().unavailable) {
      return std::string{"no CUDA driver/device: "} + why;
    }
    std::uint32_t version = 0;
    if (CUptiResult const r = cuptiGetVersion(&version); r != CUPTI_SUCCESS) {
      return "cuptiGetVersion: " + cupti_result_text(r);
    }
    if (version < CUPTI_API_VERSION) {
      return "the CUPTI library (API version " + std::to_string(version) +
             ") is older than the headers nsightkit was built with (" +
             std::to_string(CUPTI_API_VERSION) + ")";
    }
    if (CUptiResult const r = cuptiSubscribe(&subscriber_, &CuptiSource::on_callback, this);
        r != CUPTI_SUCCESS) {
      if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        return "another tool already uses CUPTI (Nsight Compute, Nsight Systems or another "
               "profiler is attached)";
      }
      return "cuptiSubscribe: " + cupti_result_text(r);
    }
    std::string why = configure();
    if (!why.empty()) {
      (void)cuptiUnsubscribe(subscriber_);
      return why;
    }
    active_ = true;
    return {};
  }

  std::string configure() {
    // Activity timestamps on the report's own clock, so GPU work lines up with CPU ranges.
    if (CUptiResult const r = cuptiActivityRegisterTimestampCallback(&CuptiSource::timestamp);
        r != CUPTI_SUCCESS) {
      return "cuptiActivityRegisterTimestampCallback: " + cupti_result_text(r);
    }
    if (CUptiResult const r = cuptiActivityRegisterCallbacks(&CuptiSource::buffer_requested,
                                                             &CuptiSource::buffer_completed);
        r != CUPTI_SUCCESS) {
      return "cuptiActivityRegisterCallbacks: " + cupti_result_text(r);
    }
    // Launches are seen in the driver's calls alone: each runtime launch makes one, with the
    // same correlation id, so callbacks on both would be two per launch (bench_cupti). The
    // runtime's calls are watched for capture edges and host-blocking time, and for launches only
    // where no driver launch callback could be enabled.
    std::size_t driver_launches = 0;
    for (CUpti_CallbackDomain domain : {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_CB_DOMAIN_RUNTIME_API}) {
      std::uint32_t const size = domain == CUPTI_CB_DOMAIN_RUNTIME_API
                                     ? static_cast<std::uint32_t>(CUPTI_RUNTIME_TRACE_CBID_SIZE)
                                     : static_cast<std::uint32_t>(CUPTI_DRIVER_TRACE_CBID_SIZE);
      bool const runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
      for (std::uint32_t cbid = 1; cbid < size; ++cbid) {
        char const* n = nullptr;
        if (cuptiGetCallbackName(domain, cbid, &n) != CUPTI_SUCCESS || n == nullptr) continue;
        int const edge = capture_edge(n);
        bool const launch = launch_like(domain, n) && (!runtime || driver_launches == 0);
        bool const blocking = host_blocking(domain, n);
        if (!launch && edge == 0 && !blocking) continue;
        auto& kinds = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? runtime_kinds_ : driver_kinds_;
        if (cbid < kinds.size()) {
          kinds[cbid] = static_cast<std::uint8_t>((launch ? 1 : 0) | (edge == 1 ? 2 : 0) |
                                                  (edge == 2 ? 4 : 0) | (blocking ? 8 : 0));
          if (blocking) {
            // Shown without CUPTI's version suffix: "cudaMemcpy", not "cudaMemcpy_v3020".
            std::string_view full{n};
            std::size_t const v = full.rfind("_v");
            if (v != std::string_view::npos && v + 2 < full.size() &&
                full.find_first_not_of("0123456789", v + 2) == std::string_view::npos)
              full = full.substr(0, v);
            api_names_.emplace_back(full);
            sync_names_[cbid] = intern_name(api_names_.back().c_str());
          }
        }
        if (cuptiEnableCallback(1, subscriber_, domain, cbid) == CUPTI_SUCCESS) {
          enabled_.emplace_back(domain, cbid);
          if (!runtime && launch) ++driver_launches;
        }
      }
    }
    if (enabled_.empty()) return "no launch callback could be enabled";
    (void)cuptiEnableDomain(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE);
    for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                 CUPTI_ACTIVITY_KIND_MEMSET}) {
      if (CUptiResult const r = cuptiActivityEnable(k); r != CUPTI_SUCCESS) {
        return "cuptiActivityEnable: " + cupti_result_text(r);
      }
      kinds_.push_back(k);
    }
    // Device allocations per path, where this CUPTI records them.
    if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2) == CUPTI_SUCCESS)
      kinds_.push_back(CUPTI_ACTIVITY_KIND_MEMORY2);
    return {};
  }

  static std::uint64_t CUPTIAPI timestamp() {
    State const* s = state();
    std::int64_t const t = s != nullptr ? s->now() : clock_now(process_tsc());
    return static_cast<std::uint64_t>(t > 0 ? t : 0);
  }

  static void CUPTIAPI on_callback(void* self, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                   void const* data) {
    auto* me = static_cast<CuptiSource*>(self);
    if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
      auto const* r = static_cast<CUpti_ResourceData const*>(data);
      if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) me->add_context(r->context);
      if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) me->context_ending(r->context);
      if (cbid == CUPTI_CBID_RESOURCE_STREAM_DESTROY_STARTING)
        me->forget_stream(r->resourceHandle.stream);
      if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED ||
          cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
        auto const* g = static_cast<CUpti_GraphData const*>(r->resourceDescriptor);
        std::uint64_t id = 0, original = 0;
        if (g != nullptr && cuptiGetGraphNodeId(g->node, &id) == CUPTI_SUCCESS) {
          if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED) {
            me->note_graph_node(id);
          } else if (g->originalNode != nullptr &&
                     cuptiGetGraphNodeId(g->originalNode, &original) == CUPTI_SUCCESS) {
            me->note_graph_clone(id, original);
          }
        }
      }
      return;
    }
    auto const* d = static_cast<CUpti_CallbackData const*>(data);
    if (d->callbackSite != CUPTI_API_ENTER) {
      // A capture being watched: every runtime call that returns goes to the graph observer.
      if (domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
          graph_watch.watching.load(std::memory_order_relaxed) > 0) {
        if (GraphObserver obs = graph_watch.observer.load(std::memory_order_acquire)) {
          int const status = d->functionReturnValue != nullptr
                                 ? *static_cast<int const*>(d->functionReturnValue)
                                 : 0;
          obs(GraphApiCall{d->functionName, status, true, os_thread_id(), 0, 0});
        }
      }
      std::uint8_t const done = me->cbid_kind(domain, cbid);
      if ((done & 4u) != 0) me->note_capture(false);
      if ((done & 8u) != 0 && blocking_since() != 0) {
        State const* s = state();
        std::int64_t const end = s != nullptr ? s->now() : blocking_since();
        me->note_sync(me->sync_names_[cbid], end - blocking_since());
        blocking_since() = 0;
      }
      return;
    }
    std::uint8_t const kind = me->cbid_kind(domain, cbid);
    if ((kind & 2u) != 0) me->note_capture(true);
    if ((kind & 8u) != 0) {
      State const* s = state();
      blocking_since() = s != nullptr ? s->now() : 0;
    }
    if ((kind & 1u) == 0) return;  // a call seen only for the graph observer
    if (!me->exit_registered_.load(std::memory_order_acquire) &&
        !me->exit_registered_.exchange(true)) {
      // Registered once CUDA is in use, so it runs before CUDA's own teardown at exit.
      std::atexit(&CuptiSource::at_exit);
    }
    State const* s = state();
    me->note_launch(d->correlationId, s != nullptr ? s->now() : 0);
    // A context created before the subscription is learnt from its first launch.
    thread_local CUcontext last = nullptr;
    if (d->context != last) {
      last = d->context;
      me->add_context(d->context);
    }
  }

  /// The stream's device and CUPTI id, as its activity records carry them; learnt the first
  /// time a range makes it current (on that thread, whose current device is the stream's).
  bool stream_key(void* stream, std::uint64_t& key) override {
    if (reinterpret_cast<std::uintptr_t>(stream) <= 2) return false;  // the default streams
    NSIGHTKIT_DETAIL_TRY {
      std::lock_guard<std::mutex> lock{streams_mutex_};
      for (auto const& [known, k] : stream_keys_) {
        if (known == stream) {
          key = k;
          return true;
        }
      }
      std::uint32_t id = 0, device = 0;
      if (cuptiGetStreamIdEx(nullptr, static_cast<CUstream>(stream), 0, &id) != CUPTI_SUCCESS ||
          cuptiGetDeviceId(nullptr, &device) != CUPTI_SUCCESS)
        return false;
      key = (std::uint64_t{device} << 32) | id;
      if (stream_keys_.size() >= 4096) stream_keys_.erase(stream_keys_.begin());
      stream_keys_.emplace_back(stream, key);
      return true;
    }
    NSIGHTKIT_DETAIL_CATCH(...) {}
    return false;
  }

  /// A stream is destroyed: its handle may come back for another stream.
  void forget_stream(CUstream stream) {
    std::lock_guard<std::mutex> lock{streams_mutex_};
    for (auto it = stream_keys_.begin(); it != stream_keys_.end(); ++it) {
      if (it->first == static_cast<void*>(stream)) {
        stream_keys_.erase(it);
        return;
      }
    }
  }

  void add_context(CUcontext ctx) {
    if (ctx == nullptr) return;
    std::lock_guard<std::mutex> lock{contexts_mutex_};
    for (CUcontext c : contexts_) {
      if (c == ctx) return;
    }
    contexts_.push_back(ctx);
    // The legacy default stream's id in this context, to recognise work on it.
    std::uint32_t context_id = 0, stream_id = 0;
    if (cuptiGetContextId(ctx, &context_id) == CUPTI_SUCCESS &&
        cuptiGetStreamIdEx(ctx, nullptr, 0, &stream_id) == CUPTI_SUCCESS) {
      legacy_streams_.emplace_back(context_id, stream_id);
    }
  }

  /// True when (context, stream) is a context's legacy default stream.
  bool legacy_stream(std::uint32_t context_id, std::uint32_t stream_id) {
    std::lock_guard<std::mutex> lock{contexts_mutex_};
    for (auto const& [c, st] : legacy_streams_) {
      if (c == context_id && st == stream_id) return true;
    }
    return false;
  }

  /// When the calling thread entered the host-blocking call it is in (0: none).
  static std::int64_t& blocking_since() noexcept {
    thread_local std::int64_t t = 0;
    return t;
  }

  /// A context is about to go: its work must arrive while it still exists.
  void context_ending(CUcontext ctx) {
    (void)cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::lock_guard<std::mutex> lock{contexts_mutex_};
    for (std::size_t i = 0; i < contexts_.size(); ++i) {
      if (contexts_[i] == ctx) {
        contexts_.erase(contexts_.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
    }
  }

  /// Waits for all work of every context seen, so its activities can be delivered.
  void synchronize_contexts() {
    std::vector<CUcontext> contexts;
    {
      std::lock_guard<std::mutex> lock{contexts_mutex_};
      contexts = contexts_;
    }
    cuda_driver::Api const& a = cuda_driver::api();
    if (a.unavailable != nullptr || a.ctx_push_current == nullptr || a.ctx_pop_current == nullptr ||
        a.ctx_synchronize == nullptr)
      return;
    for (CUcontext c : contexts) {
      if (a.ctx_push_current(c) != cuda_driver::success) continue;
      int const st = a.ctx_synchronize();
      void* popped = nullptr;
      (void)a.ctx_pop_current(&popped);
      if (st != cuda_driver::success && st != cuda_driver::deinitialized) {
        std::string m = "cuCtxSynchronize returned ";
        cuda_driver::describe(m, st);
        set_error(m);
      }
    }
  }

  static void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size,
                                        std::size_t* max_records) {
    constexpr std::size_t bytes = std::size_t{8} << 20;
    *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, bytes));
    *size = *buffer != nullptr ? bytes : 0;
    *max_records = 0;
  }

  static void CUPTIAPI buffer_completed(CUcontext ctx, std::uint32_t stream, std::uint8_t* buffer,
                                        std::size_t size, std::size_t valid) {
    (void)size;
    CuptiSource& me = instance();
    std::vector<GpuActivity> batch;
    NSIGHTKIT_DETAIL_TRY {
      CUpti_Activity* record = nullptr;
      while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        GpuActivity a;
        if (me.convert(*record, a)) batch.push_back(a);
      }
      if (!batch.empty()) me.add_activities(batch.data(), batch.size());
    }
    NSIGHTKIT_DETAIL_CATCH(...) { me.add_dropped(batch.size()); }
    std::size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped != 0)
      me.add_dropped(dropped);
    std::free(buffer);
  }

  /// CUPTI's record as a GpuActivity; false for kinds and states the report does not use.
  bool convert(CUpti_Activity const& r, GpuActivity& a) {
    switch (r.kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        auto const& k = reinterpret_cast<CUpti_ActivityKernel10 const&>(r);
        if (k.start == 0 || k.end < k.start) return incomplete();
        a.kind = GpuActivity::Kind::kernel;
        a.correlation = k.correlationId;
        a.device = k.deviceId;
        a.stream = k.streamId;
        a.start = static_cast<std::int64_t>(k.start);
        a.end = static_cast<std::int64_t>(k.end);
        a.name = intern_name(k.name);
        a.graph_node = k.graphNodeId;
        a.legacy = legacy_stream(k.contextId, k.streamId);
        return true;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        auto const& m = reinterpret_cast<CUpti_ActivityMemcpy6 const&>(r);
        if (m.start == 0 || m.end < m.start) return incomplete();
        a.kind = GpuActivity::Kind::memcpy;
        a.copy = copy_kind(m.copyKind);
        a.pageable = m.srcKind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE ||
                     m.dstKind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
        a.correlation = m.correlationId;
        a.device = m.deviceId;
        a.stream = m.streamId;
        a.start = static_cast<std::int64_t>(m.start);
        a.end = static_cast<std::int64_t>(m.end);
        a.bytes = m.bytes;
        a.graph_node = m.graphNodeId;
        a.legacy = legacy_stream(m.contextId, m.streamId);
        return true;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        auto const& m = reinterpret_cast<CUpti_ActivityMemset4 const&>(r);
        if (m.start == 0 || m.end < m.start) return incomplete();
        a.kind = GpuActivity::Kind::memset;
        a.pageable = m.memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
        a.correlation = m.correlationId;
        a.device = m.deviceId;
        a.stream = m.streamId;
        a.start = static_cast<std::int64_t>(m.start);
        a.end = static_cast<std::int64_t>(m.end);
        a.bytes = m.bytes;
        a.graph_node = m.graphNodeId;
        return true;
      }
      case CUPTI_ACTIVITY_KIND_MEMORY2: {
        auto const& m = reinterpret_cast<CUpti_ActivityMemory4 const&>(r);
        if (m.memoryKind != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) return false;
        if (m.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION) {
          a.kind = GpuActivity::Kind::alloc;
        } else if (m.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) {
          a.kind = GpuActivity::Kind::free;
        } else {
          return false;
        }
        a.correlation = m.correlationId;
        a.device = m.deviceId;
        a.stream = m.streamId;
        a.start = a.end = static_cast<std::int64_t>(m.timestamp);
        a.bytes = m.bytes;
        a.address = m.address;
        return true;
      }
      default: return false;
    }
  }

  bool incomplete() noexcept {
    add_dropped(1);  // a forced flush delivered work that had not finished
    return false;
  }

  static void at_exit() noexcept {
    // Runs before CUDA's own teardown: the work still in flight is waited for and delivered.
    CuptiSource& me = instance();
    NSIGHTKIT_DETAIL_TRY { me.deliver(); }
    NSIGHTKIT_DETAIL_CATCH(...) {}
    me.stopped_.store(true, std::memory_order_release);
  }

  std::mutex start_mutex_;
  std::atomic<bool> exit_registered_{false};
  bool tried_{false};
  bool active_{false};
  std::string why_;
  CUpti_SubscriberHandle subscriber_{};
  std::vector<std::pair<CUpti_CallbackDomain, CUpti_CallbackId>> enabled_;
  // What each callback id of the runtime and driver domains is to the source: 1 launch-like,
  // 2 begins a capture, 4 ends one (0: seen only for the graph observer).
  std::vector<std::uint8_t> runtime_kinds_ =
      std::vector<std::uint8_t>(CUPTI_RUNTIME_TRACE_CBID_SIZE, 0);
  std::vector<std::uint8_t> driver_kinds_ =
      std::vector<std::uint8_t>(CUPTI_DRIVER_TRACE_CBID_SIZE, 0);

  [[nodiscard]] std::uint8_t cbid_kind(CUpti_CallbackDomain domain,
                                       CUpti_CallbackId cbid) const noexcept {
    auto const& v = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? runtime_kinds_ : driver_kinds_;
    return cbid < v.size() ? v[cbid] : std::uint8_t{0};
  }

  std::vector<CUpti_ActivityKind> kinds_;
  std::deque<std::string> api_names_;  // stable storage of the names interned above
  std::vector<std::uint32_t> sync_names_ =
      std::vector<std::uint32_t>(CUPTI_RUNTIME_TRACE_CBID_SIZE, 0);
  std::mutex contexts_mutex_;
  std::vector<CUcontext> contexts_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> legacy_streams_;  // (context, stream id)
  std::mutex streams_mutex_;
  std::vector<std::pair<void*, std::uint64_t>> stream_keys_;  // streams ranges made current
};

NSIGHTKIT_DETAIL_VISIBLE inline std::atomic<CuptiSource*> cupti_source_ptr{nullptr};

inline CuptiSource& CuptiSource::instance() {
  CuptiSource* s = cupti_source_ptr.load(std::memory_order_acquire);
  if (s != nullptr) return *s;
  auto* fresh = new CuptiSource{};
  if (cupti_source_ptr.compare_exchange_strong(s, fresh, std::memory_order_acq_rel)) return *fresh;
  delete fresh;  // another thread or library made it first
  return *s;
}

/// The provider <nsightkit/cupti.hpp> installs (see cupti_provider).
inline GpuSource* cupti_source() noexcept {
  NSIGHTKIT_DETAIL_TRY { return &CuptiSource::instance(); }
  NSIGHTKIT_DETAIL_CATCH(...) { return nullptr; }
  return nullptr;
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
