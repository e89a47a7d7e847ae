#include "minidl/data/transforms/random_crop.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "minidl/core/error.h"
#include "minidl/data/transforms/augmentation_math.h"

namespace minidl::data {

RandomCrop::RandomCrop(Size2 size, int64_t padding, uint64_t seed)
    : size_(size), padding_(padding), seed_(seed) {
  MINIDL_CHECK(size.h > 0 && size.w > 0, "RandomCrop: size must be positive, got ", size.h, "x",
               size.w);
  MINIDL_CHECK(padding >= 0, "RandomCrop: padding must be non-negative, got ", padding);
}

ImageSpec RandomCrop::output_spec(const ImageSpec& input) const {
  MINIDL_CHECK(size_.h <= input.height + 2 * padding_ && size_.w <= input.width + 2 * padding_,
               name(), ": the ", size_.h, "x", size_.w, " window does not fit in a ", input.height,
               "x", input.width, " image padded by ", padding_);
  ImageSpec output = input;
  output.height = size_.h;
  output.width = size_.w;
  return output;
}

void RandomCrop::apply(const SampleKey& sample, const ImageSpec& input_spec, const void* input,
                       void* output) const {
  const int64_t in_h = input_spec.height, in_w = input_spec.width;
  const int64_t out_h = size_.h, out_w = size_.w;
  const CropOffset crop =
      draw_crop_offset(seed_, sample.epoch, sample.index, in_h, in_w, out_h, out_w, padding_);
  const size_t element = element_size(input_spec.dtype);
  // Output columns [valid_begin, valid_end) come from input columns starting at first_source;
  // the rest of each row is padding.
  const int64_t first_source_x = crop.left - padding_;
  const int64_t valid_begin = std::clamp<int64_t>(-first_source_x, 0, out_w);
  const int64_t valid_end = std::clamp<int64_t>(in_w - first_source_x, valid_begin, out_w);
  const auto* in = static_cast<const std::byte*>(input);
  auto* out = static_cast<std::byte*>(output);
  for (int64_t c = 0; c < input_spec.channels; ++c) {
    for (int64_t y = 0; y < out_h; ++y) {
      std::byte* out_row = out + ((c * out_h + y) * out_w) * element;
      const int64_t source_y = y + crop.top - padding_;
      if (source_y < 0 || source_y >= in_h || valid_begin == valid_end) {
        std::memset(out_row, 0, out_w * element);
        continue;
      }
      const std::byte* in_row = in + ((c * in_h + source_y) * in_w) * element;
      std::memset(out_row, 0, valid_begin * element);
      std::memcpy(out_row + valid_begin * element,
                  in_row + (valid_begin + first_source_x) * element,
                  (valid_end - valid_begin) * element);
      std::memset(out_row + valid_end * element, 0, (out_w - valid_end) * element);
    }
  }
}

std::string RandomCrop::name() const {
  return "RandomCrop(" + std::to_string(size_.h) + "x" + std::to_string(size_.w) +
         ", padding=" + std::to_string(padding_) + ")";
}

}  // namespace minidl::data
