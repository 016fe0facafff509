// Internal: the duration distribution behind every row of the report (CPU and GPU times).
//
// Exact first, approximate past a cap: a Distribution keeps every duration until it holds `cap` of
// them, then folds them into a log-linear histogram (32 buckets per power of two: a bucket is at
// most 1/32 of its lower bound wide, so a percentile read from it, the bucket's midpoint clamped to
// [min, max], is within 1/64 ≈ 1.6 % of a value of that bucket). count, total, min, max and mean
// are always exact. Percentiles use the nearest-rank definition: p is the smallest recorded value
// such that at least p % of the values are <= it.
//
// Pure C++ (no NVTX, no CUDA): available in enabled and disabled builds alike.
#pragma once

#include <nsightkit/config.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// Bucket arithmetic of the log-linear histogram (HDR-histogram style, 5 sub-bucket bits).
struct LogBuckets {
  static int floor_log2(std::uint64_t u) noexcept {
#if defined(__GNUC__) || defined(__clang__)
    return 63 - __builtin_clzll(u);
#else
    int e = 63;
    while (((u >> e) & 1u) == 0u) --e;
    return e;
#endif
  }

  static constexpr int sub_bits = 5;
  static constexpr std::int64_t sub_count = std::int64_t{1} << sub_bits;  // 32

  /// Index of the bucket holding `v` (v <= 0 lands in bucket 0).
  static std::int32_t index(std::int64_t v) noexcept {
    if (v < sub_count) return v <= 0 ? 0 : static_cast<std::int32_t>(v);
    auto const u = static_cast<std::uint64_t>(v);
    int const e = floor_log2(u);  // >= sub_bits here
    int const shift = e - sub_bits;
    auto const mantissa = static_cast<std::int64_t>(u >> shift);  // in [32, 64)
    return static_cast<std::int32_t>((shift + 1) * sub_count + (mantissa - sub_count));
  }

  /// Smallest value of bucket `i`.
  static std::int64_t lower(std::int32_t i) noexcept {
    if (i < sub_count) return i;
    int const shift = static_cast<int>(i / sub_count) - 1;
    std::int64_t const mantissa = i % sub_count + sub_count;
    return mantissa << shift;
  }

  /// Number of values in bucket `i`.
  static std::int64_t width(std::int32_t i) noexcept {
    if (i < sub_count) return 1;
    return std::int64_t{1} << (i / sub_count - 1);
  }

  /// The value a percentile read from bucket `i` reports: its midpoint.
  static std::int64_t representative(std::int32_t i) noexcept {
    return lower(i) + (width(i) - 1) / 2;
  }
};

/// Durations (ns) of one path: count/total/min/max exact; percentiles exact up to a cap.
class Distribution {
 public:
  /// Records one duration. `cap` is the number of values kept exactly (0: histogram at once).
  void add(std::int64_t ns, std::size_t cap) {
    if (ns < 0) ns = 0;
    ++count_;
    total_ += ns;
    min_ = count_ == 1 ? ns : std::min(min_, ns);
    max_ = count_ == 1 ? ns : std::max(max_, ns);
    if (exact_) {
      if (samples_.size() < cap) {
        samples_.push_back(ns);
        return;
      }
      to_histogram();
    }
    std::int32_t const i = LogBuckets::index(ns);
    auto const k = static_cast<std::size_t>(i - base_);  // wraps for i < base_
    if (k < buckets_.size()) {
      ++buckets_[k];  // the common case: a bucket already in range
    } else {
      bump(i, 1);
    }
  }

  /// Adds every value of `other` (report time only: the merged result may exceed any cap while
  /// both sides are exact, so merged percentiles stay exact whenever the inputs were).
  void merge(Distribution const& other) {
    if (other.count_ == 0) return;
    min_ = count_ == 0 ? other.min_ : std::min(min_, other.min_);
    max_ = count_ == 0 ? other.max_ : std::max(max_, other.max_);
    count_ += other.count_;
    total_ += other.total_;
    if (exact_ && other.exact_) {
      samples_.insert(samples_.end(), other.samples_.begin(), other.samples_.end());
      return;
    }
    to_histogram();
    if (other.exact_) {
      for (std::int64_t v : other.samples_) bump(LogBuckets::index(v), 1);
    } else {
      for (std::size_t k = 0; k < other.buckets_.size(); ++k) {
        if (other.buckets_[k] != 0)
          bump(other.base_ + static_cast<std::int32_t>(k), other.buckets_[k]);
      }
    }
  }

  /// Number of durations recorded.
  [[nodiscard]] std::uint64_t count() const noexcept { return count_; }
  /// Sum of the durations.
  [[nodiscard]] std::int64_t total() const noexcept { return total_; }
  /// Smallest duration (0 when empty).
  [[nodiscard]] std::int64_t min() const noexcept { return min_; }
  /// Largest duration (0 when empty).
  [[nodiscard]] std::int64_t max() const noexcept { return max_; }
  /// Mean duration (0 when empty).
  [[nodiscard]] double mean() const noexcept {
    return count_ == 0 ? 0.0 : static_cast<double>(total_) / static_cast<double>(count_);
  }
  /// True while every duration is kept, i.e. percentiles are exact.
  [[nodiscard]] bool exact() const noexcept { return exact_; }

  /// Nearest-rank percentile, p in [0, 100]; 0 when empty.
  [[nodiscard]] std::int64_t percentile(double p) const {
    if (count_ == 0) return 0;
    std::uint64_t const rank = nearest_rank(p, count_);
    if (exact_) {
      std::vector<std::int64_t> sorted = samples_;
      auto const nth = sorted.begin() + static_cast<std::ptrdiff_t>(rank - 1);
      std::nth_element(sorted.begin(), nth, sorted.end());
      return *nth;
    }
    if (rank == count_) return max_;
    if (rank == 1) return min_;
    std::uint64_t seen = 0;
    for (std::size_t k = 0; k < buckets_.size(); ++k) {
      seen += buckets_[k];
      if (seen >= rank) {
        std::int64_t const v = LogBuckets::representative(base_ + static_cast<std::int32_t>(k));
        return std::clamp(v, min_, max_);
      }
    }
    return max_;
  }

  /// The 1-based rank of percentile p among n values (nearest-rank method).
  static std::uint64_t nearest_rank(double p, std::uint64_t n) noexcept {
    if (!(p > 0.0)) return 1;
    if (p >= 100.0) return n;
    auto const r = static_cast<std::uint64_t>(std::ceil(p / 100.0 * static_cast<double>(n)));
    return std::clamp<std::uint64_t>(r, 1, n);
  }

  /// Approximate memory held, for the documentation's cost statements and tests.
  [[nodiscard]] std::size_t heap_bytes() const noexcept {
    return samples_.capacity() * sizeof(std::int64_t) + buckets_.capacity() * sizeof(std::uint64_t);
  }

 private:
  void to_histogram() {
    if (!exact_) return;
    exact_ = false;
    std::vector<std::int64_t> samples;
    samples.swap(samples_);
    for (std::int64_t v : samples) bump(LogBuckets::index(v), 1);
  }

  // Dense buckets from base_ to base_ + size - 1, grown on either side as needed.
  void bump(std::int32_t index, std::uint64_t n) {
    if (buckets_.empty()) {
      base_ = index;
      buckets_.assign(1, 0);
    } else if (index < base_) {
      buckets_.insert(buckets_.begin(), static_cast<std::size_t>(base_ - index), 0);
      base_ = index;
    } else if (index >= base_ + static_cast<std::int32_t>(buckets_.size())) {
      buckets_.resize(static_cast<std::size_t>(index - base_) + 1, 0);
    }
    buckets_[static_cast<std::size_t>(index - base_)] += n;
  }

  std::uint64_t count_{0};
  std::int64_t total_{0};
  std::int64_t min_{0};
  std::int64_t max_{0};
  bool exact_{true};
  std::vector<std::int64_t> samples_;
  std::int32_t base_{0};
  std::vector<std::uint64_t> buckets_;
};

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
