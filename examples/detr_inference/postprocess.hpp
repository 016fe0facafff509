// Post-processing on the host: class probabilities, top-k queries, boxes in pixels; and the
// latency summary the program prints.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

namespace detr {

/// One detected object.
struct Detection {
  int query{0};                ///< the object query that produced it
  int label{0};                ///< class index in [0, num_classes)
  float score{0};              ///< softmax probability of `label`
  std::array<float, 4> box{};  ///< (x0, y0, x1, y1) in pixels
};

/// (cx, cy, w, h) relative to the image -> (x0, y0, x1, y1) in pixels, clamped to the image.
std::array<float, 4> cxcywh_to_xyxy(std::array<float, 4> const& box, float width, float height);

/// Indices of the k largest scores, largest first; equal scores keep index order; NaN scores
/// rank last. k larger than the number of scores returns all of them.
/// @throws std::invalid_argument when k is 0.
std::vector<std::size_t> top_k(std::vector<float> const& scores, std::size_t k);

/// DETR's post-processing for a batch: per query, softmax over the num_classes + 1 logits (the
/// last is "no object"); score and label from the best real class; the k best queries per image.
/// logits [batch, queries, classes1], boxes [batch, queries, 4] (cx, cy, w, h in [0, 1]).
/// @throws std::invalid_argument on inconsistent sizes or k = 0.
std::vector<std::vector<Detection>> postprocess(std::vector<float> const& logits,
                                                std::vector<float> const& boxes, int batch,
                                                int queries, int classes1, std::size_t k,
                                                float width, float height);

/// Summary of a set of durations. Percentiles by the nearest-rank method (the smallest value with
/// at least p % of the values at or below it), as nsightkit's report computes them.
struct LatencyStats {
  std::size_t count{0};
  double mean{0}, min{0}, p50{0}, p95{0}, max{0};
};

/// The summary of `values` (all zero for none).
LatencyStats summarize(std::vector<double> values);

}  // namespace detr
