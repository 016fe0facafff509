// Deterministic synthetic images: a colour gradient, a few coloured rectangles ("objects") and
// a little noise, already normalized (roughly zero mean, unit scale). No downloads.
#pragma once

#include <cstdint>

namespace detr {

/// Writes image `index` as size x size x 3 floats (HWC: channels last, the NHWC layout of one
/// image) to `dst`.
void synth_image(std::uint64_t index, int size, float* dst);

}  // namespace detr
