// The input side of the inference loop: synthetic images rendered once (the "decoded dataset"),
// and the loops that hand batches of them to the model. On the GPU the batches come through
// nsightkit::StreamPrefetcher (H2D copies of batch N+1 on a side stream, staged through pinned
// memory, while batch N computes); on the CPU a "loader" module copies them into the input tensor.
#pragma once

#include "common/backend.hpp"
#include "common/tensor.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace detr {

/// `count` distinct synthetic images of size x size (NHWC floats), rendered once.
class ImageCache {
 public:
  ImageCache(int size, std::size_t count);
  /// Image i mod count.
  [[nodiscard]] float const* image(std::size_t i) const noexcept {
    return pixels_.data() + (i % count_) * per_image_;
  }
  [[nodiscard]] std::size_t floats_per_image() const noexcept { return per_image_; }
  [[nodiscard]] int size() const noexcept { return size_; }

 private:
  int size_;
  std::size_t count_;
  std::size_t per_image_;
  std::vector<float> pixels_;
};

/// What the loops run.
struct LoopSpec {
  int batch{1};
  std::size_t iterations{1};  ///< warm-up and measured iterations together
};

/// The loop body: iteration number and the input batch (NHWC [batch, 3, size, size] tensor of
/// the backend, ready for the backend's compute stream).
using LoopBody = std::function<void(std::size_t iteration, nn::Tensor const& images)>;

/// The CPU loop: per iteration, the "loader" module copies the batch's images into the input
/// tensor, then the body runs.
void run_cpu_loop(nn::Backend& backend, ImageCache const& images, LoopSpec spec,
                  LoopBody const& body);

/// The GPU loop: a StreamPrefetcher (depth 2, pinned staging) feeds the body; the body runs with
/// the backend's stream as the report's current stream, so every module range inside also gets
/// its GPU time. Returns a line of prefetch statistics.
/// @throws std::runtime_error where the program is built without CUDA.
std::string run_cuda_loop(nn::Backend& backend, ImageCache const& images, LoopSpec spec,
                          LoopBody const& body);

}  // namespace detr
