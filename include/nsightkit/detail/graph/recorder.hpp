// Internal: what GraphRecorder (graph.hpp) needs — the CUDA calls with their error text, and the
// watch that collects unsafe calls during a recording. The calls themselves are seen by the CUPTI
// source, which hands each returning API call to the observer here through
// detail/graph_state.hpp; without the CUPTI component the observer is never called and a failed
// recording is described from CUDA's own errors. The functions that build text and the watch
// itself are defined in recorder_impl.hpp: header-only, included below; in the compiled mode
// (detail/compiled.hpp), once, in src/nsightkit_cuda.cpp.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/cuda_check.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/detail/graph_state.hpp>
#include <nsightkit/graph_types.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::graph {

inline cudaStreamCaptureMode cuda_mode(GraphRecordMode m) noexcept {
  switch (m) {
    case GraphRecordMode::thread: return cudaStreamCaptureModeThreadLocal;
    case GraphRecordMode::relaxed: return cudaStreamCaptureModeRelaxed;
    case GraphRecordMode::global: break;
  }
  return cudaStreamCaptureModeGlobal;
}

/// The default stream in any of its spellings (0, cudaStreamLegacy, cudaStreamPerThread).
inline bool is_default_stream(cudaStream_t s) noexcept {
  auto const v = reinterpret_cast<std::uintptr_t>(s);
  return v == 0 || v == 1 || v == 2;
}

inline void destroy(cudaGraphExec_t exec, cudaGraph_t graph) noexcept {
  if (exec != nullptr) (void)cudaGraphExecDestroy(exec);
  if (graph != nullptr) (void)cudaGraphDestroy(graph);
}

/// Throws CudaError for a failed call of the graph `name`.
inline void check(cudaError_t st, char const* call, std::string const& name) {
  if (st == cudaSuccess) return;
  std::string const where = "graph '" + name + "'";
  cuda_check(st, call, where.c_str(), 0);
}

/// Updates `exec` in place from `graph`; false when CUDA refuses (another topology).
inline bool update(cudaGraphExec_t exec, cudaGraph_t graph) noexcept {
  cudaGraphExecUpdateResultInfo info{};
  if (cudaGraphExecUpdate(exec, graph, &info) == cudaSuccess) return true;
  (void)cudaGetLastError();  // the refusal is not an error of the program
  return false;
}

/// "cudaErrorStreamCaptureInvalidated" and CUDA's text for a status.
NSIGHTKIT_DETAIL_ENTRY std::string status_text(int st);

/// Why a status breaks a recording, in words a user can act on.
NSIGHTKIT_DETAIL_ENTRY char const* status_reason(int st) noexcept;

/// A call is unsafe during recording by its nature (reported in check mode, where CUDA refuses
/// nothing): it synchronizes with the host, allocates or frees, or queries completion.
NSIGHTKIT_DETAIL_ENTRY char const* unsafe_by_name(std::string_view api) noexcept;

/// The unsafe calls of one recording, filled by the observer from any thread.
struct Watch;

/// Called by the CUPTI source for every runtime API call returning while a watch runs, on the
/// calling thread: records it in every watch when it is unsafe.
NSIGHTKIT_DETAIL_ENTRY void observe(GraphApiCall const& call) noexcept;

/// Starts watching unsafe calls for one recording (null when out of memory).
NSIGHTKIT_DETAIL_ENTRY Watch* watch_begin(std::string_view (*module_path)(), bool by_name) noexcept;

/// Stops watching; returns the unsafe calls seen.
NSIGHTKIT_DETAIL_ENTRY std::vector<GraphViolation> watch_end(Watch* w) noexcept;

/// A violation made from a status alone (no call was seen: the CUPTI source is not there).
NSIGHTKIT_DETAIL_ENTRY GraphViolation from_status(cudaError_t st, char const* call);

/// The message of a failed recording: CUDA's error, every unsafe call seen, and how to see more.
/// `watched`: whether calls were watched during the recording (false under GraphCheck::off).
NSIGHTKIT_DETAIL_ENTRY std::string failure_message(std::string const& name, cudaError_t st,
                                                   std::vector<GraphViolation> const& violations,
                                                   bool watched = true);

}  // namespace detail::graph
NSIGHTKIT_DETAIL_END_NAMESPACE

#if !NSIGHTKIT_DETAIL_COMPILED
#include <nsightkit/detail/graph/recorder_impl.hpp>
#endif
