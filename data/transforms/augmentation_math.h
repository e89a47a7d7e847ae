#pragma once
// The math of one augmented image: which random crop window and flip a sample gets, where each
// output pixel comes from, and how a pixel becomes a normalised float. The per-sample
// transforms (random_crop.cpp, random_horizontal_flip.cpp, to_float.cpp, normalize.cpp), the
// CPU batch operation (data/cpu/batch_augment.cpp) and the CUDA kernel
// (data/cuda/batch_augment.cu) all call these MINIDL_HOST_DEVICE functions, so a batch
// augmented on the device equals, bit for bit, the same samples transformed one by one.
//
// Conventions, as torchvision's RandomCrop(size, padding) then RandomHorizontalFlip(p) then
// ToTensor then Normalize(mean, std):
//   - the input [H, W] is padded by `padding` zeros on every side, and an [out_h, out_w] window
//     is cut at (top, left), each uniform over its valid range;
//   - the window is then mirrored left to right with probability p;
//   - a uint8 pixel v becomes v / 255.0f, then (value - mean[c]) / std[c]. Padding is a zero
//     pixel, so it normalises to -mean[c] / std[c], as in torchvision.
// The draws follow Note [Randomness of samples] in data/sample_random.h.
#include <cstdint>

#include "minidl/core/macros.h"
#include "minidl/data/sample_random.h"

namespace minidl::data {

// Where a crop window is cut from the padded image.
struct CropOffset {
  int64_t top = 0;
  int64_t left = 0;
};

// The crop of sample `index` in `epoch`: top in [0, in_h + 2 * padding - out_h], left likewise.
MINIDL_HOST_DEVICE CropOffset draw_crop_offset(uint64_t seed, int64_t epoch, int64_t index,
                                               int64_t in_h, int64_t in_w, int64_t out_h,
                                               int64_t out_w, int64_t padding) {
  const philox::Block words = sample_random_words(
      seed, static_cast<uint64_t>(index), static_cast<uint64_t>(epoch), DrawPurpose::CropOffset);
  const auto top_choices = static_cast<uint32_t>(in_h + 2 * padding - out_h + 1);
  const auto left_choices = static_cast<uint32_t>(in_w + 2 * padding - out_w + 1);
  return {uniform_below(words.w0, top_choices), uniform_below(words.w1, left_choices)};
}

// Whether sample `index` in `epoch` is mirrored (with probability `probability`).
MINIDL_HOST_DEVICE bool draw_horizontal_flip(uint64_t seed, int64_t epoch, int64_t index,
                                             float probability) {
  const philox::Block words =
      sample_random_words(seed, static_cast<uint64_t>(index), static_cast<uint64_t>(epoch),
                          DrawPurpose::HorizontalFlip);
  return unit_float(words.w0) < probability;
}

// The input row and column of output pixel (y, x) after cropping at `crop` (in the image padded
// by `padding`) and then mirroring an [., out_w] window when `flip`. False when the pixel
// falls in the padding (its value is zero).
MINIDL_HOST_DEVICE bool augmented_source(int64_t y, int64_t x, CropOffset crop, int64_t padding,
                                         bool flip, int64_t in_h, int64_t in_w, int64_t out_w,
                                         int64_t& source_y, int64_t& source_x) {
  const int64_t window_x = flip ? out_w - 1 - x : x;
  source_y = y + crop.top - padding;
  source_x = window_x + crop.left - padding;
  return source_y >= 0 && source_y < in_h && source_x >= 0 && source_x < in_w;
}

// A pixel as a float: uint8 scales to [0, 1] (torchvision's ToTensor), floats pass through.
MINIDL_HOST_DEVICE float pixel_to_float(uint8_t value) {
  return static_cast<float>(value) / 255.0f;
}
MINIDL_HOST_DEVICE float pixel_to_float(float value) { return value; }

MINIDL_HOST_DEVICE float normalize_pixel(float value, float mean, float std) {
  return (value - mean) / std;
}

}  // namespace minidl::data
