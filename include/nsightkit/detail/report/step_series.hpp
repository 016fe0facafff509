// Internal: capture-window step times over the run, for the HTML page's step chart — bounded.
//
// The report's step Distribution answers "how long is a step" (count, percentiles); a chart needs
// "how did step time change over the run". StepSeries keeps the steps in order at a resolution
// that halves when it fills: up to `capacity` points, each summing `stride` consecutive steps;
// when the points are full, neighbours are merged pairwise and the stride doubles. So a run of any
// length costs at most capacity * 32 bytes per thread, the whole run stays covered, and a run of
// at most `capacity` steps is kept step by step.
//
// Pure C++ (available in disabled builds, where nothing is recorded).
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/report_types.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// Points a step series keeps at most (per thread, and in a snapshot).
inline constexpr std::size_t step_series_capacity = 2048;

class StepSeries {
 public:
  /// Records a step that began at `start` (report clock) and lasted `dur` ns.
  void add(std::int64_t start, std::int64_t dur) {
    if (dur < 0) dur = 0;
    if (!points_.empty() && points_.back().steps < stride_) {
      StepPoint& p = points_.back();
      ++p.steps;
      p.total_ns += dur;
      p.max_ns = std::max(p.max_ns, dur);
      return;
    }
    if (points_.size() >= step_series_capacity) {
      halve(points_);
      stride_ *= 2;
    }
    points_.push_back(StepPoint{start, 1, dur, dur});
  }

  void clear() noexcept {
    points_.clear();
    stride_ = 1;
  }

  [[nodiscard]] std::vector<StepPoint> const& points() const noexcept { return points_; }

  /// Merges neighbouring points pairwise (the first of each pair gives the start).
  static void halve(std::vector<StepPoint>& v) {
    std::size_t out = 0;
    for (std::size_t i = 0; i < v.size(); i += 2) {
      StepPoint p = v[i];
      if (i + 1 < v.size()) {
        p.steps += v[i + 1].steps;
        p.total_ns += v[i + 1].total_ns;
        p.max_ns = std::max(p.max_ns, v[i + 1].max_ns);
      }
      v[out++] = p;
    }
    v.resize(out);
  }

  /// The points of several threads on one time line (start order), at most `capacity` of them.
  static std::vector<StepPoint> merged(std::vector<StepPoint> all) {
    std::stable_sort(all.begin(), all.end(), [](StepPoint const& a, StepPoint const& b) {
      return a.start_ns < b.start_ns;
    });
    while (all.size() > step_series_capacity) halve(all);
    return all;
  }

 private:
  std::vector<StepPoint> points_;
  std::uint64_t stride_{1};
};

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
