#include "images.hpp"

#include "common/rng.hpp"

#include <cstddef>

namespace detr {

namespace {

using nn::mix64;

/// Uniform in [0, 1) from a hash.
float unit(std::uint64_t h) noexcept { return static_cast<float>(h >> 40) / 16777216.0F; }

}  // namespace

void synth_image(std::uint64_t index, int size, float* dst) {
  std::uint64_t const key = mix64(index * 0x632be59bd9b4e019ULL + 17U);
  auto const n = static_cast<std::size_t>(size);
  constexpr int rects = 4;
  float rx0[rects], ry0[rects], rx1[rects], ry1[rects], rc[rects][3];
  for (int r = 0; r < rects; ++r) {
    auto const base = static_cast<std::uint64_t>(r) * 8U;
    float const cx = unit(mix64(key + base + 1U));
    float const cy = unit(mix64(key + base + 2U));
    float const w = 0.1F + 0.3F * unit(mix64(key + base + 3U));
    float const h = 0.1F + 0.3F * unit(mix64(key + base + 4U));
    rx0[r] = cx - w / 2;
    rx1[r] = cx + w / 2;
    ry0[r] = cy - h / 2;
    ry1[r] = cy + h / 2;
    for (int c = 0; c < 3; ++c) {
      rc[r][c] = 3.0F * unit(mix64(key + base + 5U + static_cast<std::uint64_t>(c))) - 1.5F;
    }
  }
  float const gx = unit(mix64(key + 100U)) - 0.5F;
  float const gy = unit(mix64(key + 101U)) - 0.5F;
  for (std::size_t y = 0; y < n; ++y) {
    float const fy = (static_cast<float>(y) + 0.5F) / static_cast<float>(size);
    for (std::size_t x = 0; x < n; ++x) {
      float const fx = (static_cast<float>(x) + 0.5F) / static_cast<float>(size);
      int inside = -1;  // the last rectangle covering the pixel paints it
      for (int r = 0; r < rects; ++r) {
        if (fx >= rx0[r] && fx < rx1[r] && fy >= ry0[r] && fy < ry1[r]) inside = r;
      }
      for (std::size_t c = 0; c < 3; ++c) {
        float v = inside >= 0 ? rc[inside][c]
                              : gx * (fx - 0.5F) * 2.0F + gy * (fy - 0.5F) * 2.0F +
                                    0.3F * static_cast<float>(c) - 0.3F;
        std::uint64_t const element = (y * n + x) * 3 + c;
        v += 0.1F * (unit(mix64(key ^ (element * 0x9e3779b97f4a7c15ULL))) - 0.5F);
        dst[element] = v;
      }
    }
  }
}

}  // namespace detr
