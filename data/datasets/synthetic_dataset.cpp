#include "minidl/data/datasets/synthetic_dataset.h"

#include <limits>
#include <vector>

#include "minidl/core/error.h"
#include "minidl/core/parallel.h"
#include "minidl/data/sample_random.h"

namespace minidl::data {

namespace {

constexpr int64_t kBytesPerDraw = 16;  // one Philox block: four 32-bit words
// Samples per parallel chunk: generating a sample costs about as much as copying it.
constexpr int64_t kSamplesPerChunk = 64;

// numel random bytes for `index` under `purpose`, one Philox block per 16 bytes.
void fill_random_bytes(uint8_t* out, int64_t numel, uint64_t seed, int64_t index,
                       DrawPurpose purpose) {
  for (int64_t chunk = 0; chunk * kBytesPerDraw < numel; ++chunk) {
    const philox::Block words = sample_random_words(seed, static_cast<uint64_t>(index),
                                                    static_cast<uint64_t>(chunk), purpose);
    const uint32_t block[4] = {words.w0, words.w1, words.w2, words.w3};
    for (int64_t b = 0; b < kBytesPerDraw && chunk * kBytesPerDraw + b < numel; ++b)
      out[chunk * kBytesPerDraw + b] = static_cast<uint8_t>(block[b / 4] >> (8 * (b % 4)));
  }
}

}  // namespace

std::shared_ptr<InMemoryDataset> make_synthetic_dataset(int64_t size, const Shape& image_shape,
                                                        int64_t num_classes, uint64_t seed) {
  MINIDL_CHECK(size >= 0, "make_synthetic_dataset: size must be non-negative, got ", size);
  MINIDL_CHECK(
      image_shape.size() == 3 && image_shape[0] > 0 && image_shape[1] > 0 && image_shape[2] > 0,
      "make_synthetic_dataset: expected an image shape [C, H, W] of positive sizes, got ",
      image_shape);
  MINIDL_CHECK(num_classes >= 1 && num_classes <= std::numeric_limits<uint32_t>::max(),
               "make_synthetic_dataset: num_classes must be in [1, 2^32), got ", num_classes);
  const int64_t numel = shape_numel(image_shape);

  std::vector<uint8_t> prototypes(static_cast<size_t>(num_classes * numel));
  for (int64_t c = 0; c < num_classes; ++c)
    fill_random_bytes(prototypes.data() + c * numel, numel, seed, c,
                      DrawPurpose::SyntheticPrototype);

  Tensor images = empty({size, image_shape[0], image_shape[1], image_shape[2]}, kUInt8);
  Tensor labels = empty({size}, kInt64);
  auto* pixels = static_cast<uint8_t*>(images.data_ptr());
  int64_t* label_values = labels.data_ptr<int64_t>();
  parallel_for(0, size, kSamplesPerChunk, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const philox::Block words =
          sample_random_words(seed, static_cast<uint64_t>(i), 0, DrawPurpose::SyntheticLabel);
      const int64_t label = uniform_below(words.w0, static_cast<uint32_t>(num_classes));
      label_values[i] = label;
      uint8_t* image = pixels + i * numel;
      fill_random_bytes(image, numel, seed, i, DrawPurpose::SyntheticPixels);
      const uint8_t* prototype = prototypes.data() + label * numel;
      for (int64_t p = 0; p < numel; ++p)
        image[p] = static_cast<uint8_t>((int{image[p]} + int{prototype[p]}) / 2);
    }
  });
  return std::make_shared<InMemoryDataset>(std::move(images), std::move(labels), num_classes);
}

}  // namespace minidl::data
