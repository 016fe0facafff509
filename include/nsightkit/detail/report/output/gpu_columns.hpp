// Internal: which GPU columns a snapshot's rows call for (CUDA-event times, CUPTI work).
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/report_types.hpp>

#include <algorithm>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// True when a row of `rows` was timed on a GPU stream.
inline bool any_gpu(std::vector<PathStats> const& rows) noexcept {
  return std::any_of(rows.begin(), rows.end(), [](PathStats const& r) { return r.gpu.count != 0; });
}

/// True when a row holds GPU work measured by CUPTI.
inline bool has_work(PathStats const& r) noexcept {
  return r.work.calls_with_work != 0 || r.work.kernels != 0 || r.work.allocations != 0;
}

/// True when a row of `rows` holds GPU work measured by CUPTI.
inline bool any_work(std::vector<PathStats> const& rows) noexcept {
  return std::any_of(rows.begin(), rows.end(), [](PathStats const& r) { return has_work(r); });
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
