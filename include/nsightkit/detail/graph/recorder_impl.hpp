// Internal: the definitions of detail/graph/recorder.hpp's text and watch functions. Included by
// recorder.hpp in the header-only mode, by src/nsightkit_cuda.cpp in the compiled mode
// (detail/compiled.hpp), where they are defined once for the program.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/detail/graph/recorder.hpp>
#include <nsightkit/detail/graph_state.hpp>
#include <nsightkit/detail/thread.hpp>
#include <nsightkit/graph_types.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::graph {

/// "cudaErrorStreamCaptureInvalidated" and CUDA's text for a status.
NSIGHTKIT_DETAIL_ENTRY std::string status_text(int st) {
  auto const e = static_cast<cudaError_t>(st);
  char const* name = cudaGetErrorName(e);
  char const* text = cudaGetErrorString(e);
  std::string out = name != nullptr ? name : "CUDA error " + std::to_string(st);
  if (text != nullptr) {
    out += " (";
    out += text;
    out += ')';
  }
  return out;
}

/// Why a status breaks a recording, in words a user can act on.
NSIGHTKIT_DETAIL_ENTRY char const* status_reason(int st) noexcept {
  switch (st) {
    case cudaErrorStreamCaptureUnsupported:
      return "not permitted while a stream is recorded (synchronous, allocating or querying)";
    case cudaErrorStreamCaptureInvalidated: return "the recording was already invalidated";
    case cudaErrorStreamCaptureUnjoined:
      return "a stream forked from the recorded stream was not joined back before the recording "
             "ended";
    case cudaErrorStreamCaptureImplicit:
      return "implicit synchronization with the legacy default stream";
    case cudaErrorStreamCaptureIsolation: return "a dependency on work outside the recording";
    case cudaErrorStreamCaptureWrongThread:
      return "the recording ended on another thread than it began (thread-local mode)";
    case cudaErrorStreamCaptureMerge: return "two independent recordings were merged";
    case cudaErrorStreamCaptureUnmatched: return "the recording was not begun on this stream";
    default: return "the call failed during recording";
  }
}

/// A call is unsafe during recording by its nature (reported in check mode, where CUDA refuses
/// nothing): it synchronizes with the host, allocates or frees, or queries completion.
NSIGHTKIT_DETAIL_ENTRY char const* unsafe_by_name(std::string_view api) noexcept {
  auto is = [&](std::string_view n) {
    return api == n || (api.size() > n.size() && api.compare(0, n.size(), n) == 0 &&
                        api[n.size()] == '_');  // versioned names: cudaMemcpy_v3020
  };
  if (is("cudaDeviceSynchronize") || is("cudaStreamSynchronize") || is("cudaEventSynchronize") ||
      is("cudaThreadSynchronize"))
    return "a synchronization with the host during recording";
  if (is("cudaEventQuery") || is("cudaStreamQuery")) return "a completion query during recording";
  if (is("cudaMemcpy") || is("cudaMemcpy2D") || is("cudaMemcpy3D") || is("cudaMemset") ||
      is("cudaMemset2D") || is("cudaMemset3D") || is("cudaMemcpyToSymbol") ||
      is("cudaMemcpyFromSymbol") || is("cudaMemcpyPeer"))
    return "a synchronous copy or memset during recording (use the Async form on the recorded "
           "stream)";
  if (is("cudaMalloc") || is("cudaFree") || is("cudaMallocHost") || is("cudaFreeHost") ||
      is("cudaHostAlloc") || is("cudaMallocManaged") || is("cudaMallocPitch") ||
      is("cudaMalloc3D") || is("cudaMallocArray") || is("cudaFreeArray"))
    return "allocating or freeing memory during recording (allocate before recording, or use "
           "cudaMallocAsync on the recorded stream)";
  return nullptr;
}

struct Watch {
  std::mutex mutex;
  std::vector<GraphViolation> violations;
  std::uint32_t recording_thread{0};
  std::string_view (*module_path)(){nullptr};
  bool by_name{false};  // check mode: judge calls by name too (CUDA refuses nothing)
};

/// The recordings being watched (usually one). Default visibility: one list per process.
struct WatchList {
  std::mutex mutex;
  std::vector<Watch*> active;
};
NSIGHTKIT_DETAIL_VISIBLE inline WatchList watch_list{};

/// Called by the CUPTI source for every runtime API call returning while a watch runs, on the
/// calling thread: records it in every watch when it is unsafe.
NSIGHTKIT_DETAIL_ENTRY void observe(GraphApiCall const& call) noexcept {
  if (!call.runtime || call.api == nullptr) return;
  std::string_view const api{call.api};
  bool const recording_error = call.status >= 900 && call.status <= 908;
  char const* named = unsafe_by_name(api);
  if (!recording_error && named == nullptr) return;
  NSIGHTKIT_DETAIL_TRY {
    std::lock_guard<std::mutex> lock{watch_list.mutex};
    for (Watch* w : watch_list.active) {
      if (!recording_error && !w->by_name) continue;
      GraphViolation v;
      v.api = std::string{api.substr(0, api.find("_v"))};
      v.thread = call.thread;
      if (w->module_path != nullptr) v.module_path = std::string{w->module_path()};
      v.reason = recording_error ? status_reason(call.status) : named;
      if (recording_error && named != nullptr) v.reason = named;
      if (call.status != 0) v.error = status_text(call.status);
      std::lock_guard<std::mutex> wl{w->mutex};
      if (w->violations.size() < 1000) w->violations.push_back(std::move(v));
    }
  }
  NSIGHTKIT_DETAIL_CATCH(...) {}
}

/// Starts watching unsafe calls for one recording (null when out of memory).
NSIGHTKIT_DETAIL_ENTRY Watch* watch_begin(std::string_view (*module_path)(),
                                          bool by_name) noexcept {
  NSIGHTKIT_DETAIL_TRY {
    auto* w = new Watch{};
    w->recording_thread = os_thread_id();
    w->module_path = module_path;
    w->by_name = by_name;
    {
      std::lock_guard<std::mutex> lock{watch_list.mutex};
      watch_list.active.push_back(w);
    }
    graph_watch.observer.store(&observe, std::memory_order_release);
    graph_watch.watching.fetch_add(1, std::memory_order_acq_rel);
    if (GraphWatchStart start = graph_watch.start.load(std::memory_order_acquire)) start(true);
    return w;
  }
  NSIGHTKIT_DETAIL_CATCH(...) { return nullptr; }
  return nullptr;
}

/// Stops watching; returns the unsafe calls seen.
NSIGHTKIT_DETAIL_ENTRY std::vector<GraphViolation> watch_end(Watch* w) noexcept {
  std::vector<GraphViolation> out;
  if (w == nullptr) return out;
  {
    std::lock_guard<std::mutex> lock{watch_list.mutex};
    auto& a = watch_list.active;
    a.erase(std::remove(a.begin(), a.end(), w), a.end());
  }
  if (graph_watch.watching.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    if (GraphWatchStart start = graph_watch.start.load(std::memory_order_acquire)) start(false);
  }
  {
    std::lock_guard<std::mutex> lock{w->mutex};
    out.swap(w->violations);
  }
  delete w;
  return out;
}

/// A violation made from a status alone (no call was seen: the CUPTI source is not there).
NSIGHTKIT_DETAIL_ENTRY GraphViolation from_status(cudaError_t st, char const* call) {
  GraphViolation v;
  v.api = call;
  v.reason = status_reason(static_cast<int>(st));
  v.error = status_text(static_cast<int>(st));
  v.thread = os_thread_id();
  return v;
}

/// The message of a failed recording: CUDA's error, every unsafe call seen, and how to see more.
/// `watched`: whether calls were watched during the recording (false under GraphCheck::off).
NSIGHTKIT_DETAIL_ENTRY std::string failure_message(std::string const& name, cudaError_t st,
                                                   std::vector<GraphViolation> const& violations,
                                                   bool watched) {
  std::string m = "nsightkit: recording of graph '" + name +
                  "' failed: cudaStreamEndCapture returned " + status_text(static_cast<int>(st)) +
                  " - " + status_reason(static_cast<int>(st));
  if (!violations.empty()) {
    m += "; unsafe calls:";
    for (GraphViolation const& v : violations) {
      m += "\n  " + v.api + " in '" + (v.module_path.empty() ? "(no module)" : v.module_path) +
           "' (thread " + std::to_string(v.thread) + "): " + v.reason;
      if (!v.error.empty()) m += " [returned " + v.error + "]";
    }
    return m;
  }
  cudaError_t const last = cudaGetLastError();
  if (last != cudaSuccess && last != st) {
    m += "; the first failing call returned " + status_text(static_cast<int>(last));
  }
  bool const cupti = graph_watch.cupti.load(std::memory_order_acquire);
  if (!watched) {
    m += "; this recording used GraphCheck::off: GraphCheck::strict (the default) or "
         "GraphCheck::check";
    if (!cupti) m += ", with nsightkit::cupti linked,";
    m += " names the unsafe call and its module";
  } else if (!cupti) {
    m += "; link nsightkit::cupti to have the unsafe call and its module named";
  }
  return m;
}

}  // namespace detail::graph
NSIGHTKIT_DETAIL_END_NAMESPACE
