#pragma once
// The plain parameters of one batch augmentation (crop, flip, normalize), as the CPU loop
// (data/cpu/batch_augment.cpp) and the CUDA kernel (data/cuda/batch_augment.cu) receive them,
// and the per-pixel function both evaluate. See data/transforms/augmentation_math.h for the
// conventions.
#include <cstdint>
#include <type_traits>

#include "minidl/core/macros.h"
#include "minidl/data/transforms/augmentation_math.h"

namespace minidl::data {

// Normalisation constants travel by value in the kernel's parameters, so their count is bounded.
inline constexpr int kMaxNormalizeChannels = 16;

struct BatchAugmentParams {
  uint64_t seed = 0;
  int64_t epoch = 0;
  int64_t batch = 0, channels = 0;
  int64_t in_h = 0, in_w = 0;    // input images [batch, channels, in_h, in_w]
  int64_t out_h = 0, out_w = 0;  // output images [batch, channels, out_h, out_w]
  bool crop = false;             // false: out == in and no padding
  int64_t padding = 0;
  float flip_probability = 0;  // 0: never mirror
  bool normalize = false;      // true: float32 output, (pixel - mean[c]) / std[c]
  float mean[kMaxNormalizeChannels] = {};
  float std[kMaxNormalizeChannels] = {};
};

// The random choices for one sample, drawn once and used for all its pixels.
struct SampleAugmentation {
  CropOffset crop;
  bool flip = false;
};

MINIDL_HOST_DEVICE SampleAugmentation draw_sample_augmentation(const BatchAugmentParams& params,
                                                               int64_t sample_index) {
  SampleAugmentation result;
  if (params.crop)
    result.crop = draw_crop_offset(params.seed, params.epoch, sample_index, params.in_h,
                                   params.in_w, params.out_h, params.out_w, params.padding);
  if (params.flip_probability > 0)
    result.flip =
        draw_horizontal_flip(params.seed, params.epoch, sample_index, params.flip_probability);
  return result;
}

// Output pixel (c, y, x) of one sample whose input image is `image` ([channels, in_h, in_w]).
// Out is float for float input or when normalising, else In (uint8 stays uint8).
template <class Out, class In>
MINIDL_HOST_DEVICE Out augmented_pixel(const BatchAugmentParams& params,
                                       const SampleAugmentation& draws, const In* image, int64_t c,
                                       int64_t y, int64_t x) {
  int64_t source_y = 0, source_x = 0;
  const int64_t padding = params.crop ? params.padding : 0;
  const bool inside = augmented_source(y, x, draws.crop, padding, draws.flip, params.in_h,
                                       params.in_w, params.out_w, source_y, source_x);
  const In value = inside ? image[(c * params.in_h + source_y) * params.in_w + source_x] : In(0);
  if constexpr (std::is_same_v<Out, float>) {
    const float as_float = pixel_to_float(value);
    return params.normalize ? normalize_pixel(as_float, params.mean[c], params.std[c]) : as_float;
  } else {
    static_assert(std::is_same_v<Out, In>, "only normalisation changes the dtype");
    return value;
  }
}

}  // namespace minidl::data
