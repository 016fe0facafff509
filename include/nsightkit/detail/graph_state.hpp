// Internal: the contract between CUDA-graph recording (graph.hpp) and the report's CUPTI source, so
// neither header needs the other.
//
// - While a GraphRecorder with diagnostics runs, graph_watch.watching > 0: the CUPTI source then
//   reports every runtime and driver API call that returns on any thread (its name, status and
//   thread) to graph_watch's observer, which judges whether the call was unsafe during recording.
// - A replayed node's work is attributed by the CUPTI source to the ranges that were open inside
//   the recording when the node was recorded (it watches cudaStreamBeginCapture itself), re-rooted
//   under the range around the replay: nothing to share here for that.
#pragma once

#include <nsightkit/config.hpp>

#include <atomic>
#include <cstdint>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail {

/// One API call as the CUPTI source saw it return.
struct GraphApiCall {
  char const* api;        ///< function name ("cudaMalloc", "cuMemAlloc_v2", ...)
  int status;             ///< what it returned (cudaError_t or CUresult; 0 is success)
  bool runtime;           ///< runtime API (true) or driver API (false)
  std::uint32_t thread;   ///< OS thread id of the caller
  std::int64_t start_ns;  ///< when it was entered, on the report's clock (0 if unknown)
  std::int64_t end_ns;    ///< when it returned
};

using GraphObserver = void (*)(GraphApiCall const& call) noexcept;
/// Starts (true) or stops (false) delivering API calls to the observer: the CUPTI source's.
using GraphWatchStart = void (*)(bool on) noexcept;

struct GraphWatch {
  std::atomic<int> watching{0};                  ///< recordings with diagnostics running
  std::atomic<GraphObserver> observer{nullptr};  ///< set by graph.hpp
  std::atomic<GraphWatchStart> start{nullptr};   ///< set by the CUPTI source (cupti.hpp)
  std::atomic<bool> cupti{false};  ///< the CUPTI source delivers calls (set while it does)
};

NSIGHTKIT_DETAIL_VISIBLE inline GraphWatch graph_watch{};

}  // namespace detail
NSIGHTKIT_DETAIL_END_NAMESPACE
