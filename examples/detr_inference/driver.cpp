#include "driver.hpp"

#include "images.hpp"

#include <nsightkit/hooked.hpp>
#include <nsightkit/module.hpp>

#include <cstring>
#include <stdexcept>

namespace detr {

ImageCache::ImageCache(int size, std::size_t count)
    : size_{size},
      count_{count == 0 ? 1 : count},
      per_image_{static_cast<std::size_t>(size) * static_cast<std::size_t>(size) * 3U},
      pixels_(count_ * per_image_) {
  for (std::size_t i = 0; i < count_; ++i) synth_image(i, size, pixels_.data() + i * per_image_);
}

void run_cpu_loop(nn::Backend& backend, ImageCache const& images, LoopSpec spec,
                  LoopBody const& body) {
  if (backend.device() != nn::Device::cpu) {
    throw std::invalid_argument("run_cpu_loop: the backend is not the CPU backend");
  }
  nn::Tensor input =
      backend.empty(nn::Shape{spec.batch, 3, images.size(), images.size()}, nn::Layout::nhwc);
  std::size_t const per_image = images.floats_per_image();
  // The data loader, "monkey patched" into a module: its own row in the report.
  auto load = nsightkit::instrument(
      [&](std::size_t iteration) {
        auto* dst = static_cast<float*>(input.raw());
        for (int j = 0; j < spec.batch; ++j) {
          std::size_t const index =
              iteration * static_cast<std::size_t>(spec.batch) + static_cast<std::size_t>(j);
          std::memcpy(dst + static_cast<std::size_t>(j) * per_image, images.image(index),
                      per_image * sizeof(float));
        }
      },
      "loader");
  for (std::size_t i = 0; i < spec.iterations; ++i) {
    load(i);
    body(i, input);
  }
}

}  // namespace detr
