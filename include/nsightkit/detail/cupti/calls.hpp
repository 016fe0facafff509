// Internal: which CUDA API calls the CUPTI source watches, by CUPTI's name for them: launches
// (whose correlation id the GPU work carries), host-blocking calls (their time is charged to the
// range that made them) and stream-capture edges. Shared with bench/cupti_floor.cpp, which
// subscribes empty callbacks to the same calls to measure CUPTI's own share of their cost.
#pragma once

#include <nsightkit/config.hpp>

#include <cupti.h>

#include <initializer_list>
#include <string_view>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// True for the runtime and driver calls whose correlation id work on the GPU can carry.
inline bool launch_like(CUpti_CallbackDomain domain, std::string_view name) noexcept {
  auto has = [&](std::string_view part) { return name.find(part) != std::string_view::npos; };
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    return has("Launch") || has("Memcpy") || has("Memset") || has("Malloc") || has("Free");
  }
  return name.rfind("cuLaunch", 0) == 0 || name.rfind("cuGraphLaunch", 0) == 0 ||
         name.rfind("cuMemcpy", 0) == 0 || name.rfind("cuMemset", 0) == 0 ||
         name.rfind("cuMemAlloc", 0) == 0 || name.rfind("cuMemFree", 0) == 0;
}

/// True for the calls that block the calling host thread (synchronizations, synchronous copies
/// and memsets, allocations and frees): their time is charged to the range that made them.
inline bool host_blocking(CUpti_CallbackDomain domain, std::string_view name) noexcept {
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API) return false;
  std::string_view const base = name.substr(0, name.find("_v"));
  for (char const* n :
       {"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy",
        "cudaMemcpy2D", "cudaMemcpy3D", "cudaMemset", "cudaMemset2D", "cudaMemset3D",
        "cudaMemcpyToSymbol", "cudaMemcpyFromSymbol", "cudaMalloc", "cudaFree", "cudaMallocHost",
        "cudaFreeHost", "cudaHostAlloc", "cudaMallocManaged", "cudaMallocPitch"}) {
    if (base == n) return true;
  }
  return false;
}

/// 1: the call begins a stream capture, 2: it ends one, 0: neither.
inline int capture_edge(std::string_view name) noexcept {
  if (name.find("StreamBeginCapture") != std::string_view::npos) return 1;
  if (name.find("StreamEndCapture") != std::string_view::npos) return 2;
  return 0;
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
