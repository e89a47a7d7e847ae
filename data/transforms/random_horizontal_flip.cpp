#include "minidl/data/transforms/random_horizontal_flip.h"

#include <cstdint>
#include <cstring>

#include "minidl/core/error.h"
#include "minidl/data/transforms/augmentation_math.h"

namespace minidl::data {

namespace {

// Each of `rows` rows of `width` elements of type T, reversed.
template <class T>
void mirror_rows(const void* input, void* output, int64_t rows, int64_t width) {
  const auto* in = static_cast<const T*>(input);
  auto* out = static_cast<T*>(output);
  for (int64_t r = 0; r < rows; ++r) {
    const T* in_row = in + r * width;
    T* out_row = out + r * width;
    for (int64_t x = 0; x < width; ++x) out_row[x] = in_row[width - 1 - x];
  }
}

}  // namespace

RandomHorizontalFlip::RandomHorizontalFlip(double probability, uint64_t seed)
    : probability_(probability), seed_(seed) {
  MINIDL_CHECK(probability >= 0 && probability <= 1,
               "RandomHorizontalFlip: probability must be in [0, 1], got ", probability);
}

void RandomHorizontalFlip::apply(const SampleKey& sample, const ImageSpec& input_spec,
                                 const void* input, void* output) const {
  const bool flip =
      draw_horizontal_flip(seed_, sample.epoch, sample.index, static_cast<float>(probability_));
  if (!flip) {
    std::memcpy(output, input, input_spec.nbytes());
    return;
  }
  const int64_t rows = input_spec.channels * input_spec.height, width = input_spec.width;
  // Moved as unsigned integers of the element's size: a mirror only moves bytes.
  switch (element_size(input_spec.dtype)) {
    case 1: return mirror_rows<uint8_t>(input, output, rows, width);
    case 2: return mirror_rows<uint16_t>(input, output, rows, width);
    case 4: return mirror_rows<uint32_t>(input, output, rows, width);
    case 8: return mirror_rows<uint64_t>(input, output, rows, width);
  }
  MINIDL_INTERNAL_ASSERT(false, "RandomHorizontalFlip: unexpected element size");
}

std::string RandomHorizontalFlip::name() const {
  return "RandomHorizontalFlip(p=" + std::to_string(probability_) + ")";
}

}  // namespace minidl::data
