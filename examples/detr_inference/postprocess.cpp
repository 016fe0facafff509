#include "postprocess.hpp"

#include <stdexcept>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace detr {

namespace {
void check(bool ok, char const* op, std::string const& what) {
  if (!ok) throw std::invalid_argument(std::string{op} + ": " + what);
}
}  // namespace

std::array<float, 4> cxcywh_to_xyxy(std::array<float, 4> const& box, float width, float height) {
  auto clamp = [](float v, float hi) { return std::min(std::max(v, 0.0F), hi); };
  float const cx = box[0] * width;
  float const cy = box[1] * height;
  float const hw = 0.5F * box[2] * width;
  float const hh = 0.5F * box[3] * height;
  return {clamp(cx - hw, width), clamp(cy - hh, height), clamp(cx + hw, width),
          clamp(cy + hh, height)};
}

std::vector<std::size_t> top_k(std::vector<float> const& scores, std::size_t k) {
  check(k > 0, "top_k", "k must be at least 1");
  std::vector<std::size_t> order(scores.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  auto const better = [&scores](std::size_t a, std::size_t b) {
    float const sa = scores[a];
    float const sb = scores[b];
    bool const na = std::isnan(sa);
    bool const nb = std::isnan(sb);
    if (na != nb) return nb;  // a number beats NaN
    if (!na && sa != sb) return sa > sb;
    return a < b;  // ties (and NaN pairs) in index order
  };
  std::size_t const n = std::min(k, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                    better);
  order.resize(n);
  return order;
}

std::vector<std::vector<Detection>> postprocess(std::vector<float> const& logits,
                                                std::vector<float> const& boxes, int batch,
                                                int queries, int classes1, std::size_t k,
                                                float width, float height) {
  check(batch > 0 && queries > 0 && classes1 >= 2, "postprocess",
        "need batch > 0, queries > 0 and at least one class besides 'no object'");
  auto const b = static_cast<std::size_t>(batch);
  auto const q = static_cast<std::size_t>(queries);
  auto const c1 = static_cast<std::size_t>(classes1);
  check(logits.size() == b * q * c1, "postprocess",
        "logits hold " + std::to_string(logits.size()) + " values, expected " +
            std::to_string(b * q * c1));
  check(boxes.size() == b * q * 4, "postprocess",
        "boxes hold " + std::to_string(boxes.size()) + " values, expected " +
            std::to_string(b * q * 4));
  check(k > 0, "postprocess", "k must be at least 1");
  std::vector<std::vector<Detection>> out(b);
  std::vector<float> scores(q);
  std::vector<int> labels(q);
  for (std::size_t img = 0; img < b; ++img) {
    for (std::size_t qi = 0; qi < q; ++qi) {
      float const* row = logits.data() + (img * q + qi) * c1;
      float const m = *std::max_element(row, row + c1);
      float sum = 0.0F;
      for (std::size_t c = 0; c < c1; ++c) sum += std::exp(row[c] - m);
      std::size_t const best =
          static_cast<std::size_t>(std::max_element(row, row + c1 - 1) - row);  // real classes
      scores[qi] = std::exp(row[best] - m) / sum;
      labels[qi] = static_cast<int>(best);
    }
    for (std::size_t qi : top_k(scores, k)) {
      float const* bx = boxes.data() + (img * q + qi) * 4;
      Detection d;
      d.query = static_cast<int>(qi);
      d.label = labels[qi];
      d.score = scores[qi];
      d.box = cxcywh_to_xyxy({bx[0], bx[1], bx[2], bx[3]}, width, height);
      out[img].push_back(d);
    }
  }
  return out;
}

LatencyStats summarize(std::vector<double> values) {
  LatencyStats s;
  s.count = values.size();
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  auto const rank = [&values](double p) {
    // nearest rank: ceil(p/100 * n), 1-based
    auto r = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
    r = std::max<std::size_t>(r, 1);
    return values[std::min(r, values.size()) - 1];
  };
  s.min = values.front();
  s.max = values.back();
  s.p50 = rank(50.0);
  s.p95 = rank(95.0);
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  return s;
}

}  // namespace detr
