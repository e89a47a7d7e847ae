// Per-sample transforms: what each computes, that random ones depend only on (seed, epoch,
// index), and how they compose into a dataset.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <utility>
#include <vector>

#include "dataset_files.h"
#include "minidl/data/datasets/in_memory_dataset.h"
#include "minidl/data/transforms/compose.h"
#include "minidl/data/transforms/normalize.h"
#include "minidl/data/transforms/random_crop.h"
#include "minidl/data/transforms/random_horizontal_flip.h"
#include "minidl/data/transforms/to_float.h"
#include "minidl/data/transforms/transform_dataset.h"
#include "test_util.h"

namespace minidl::data {
namespace {

// A uint8 [C, H, W] image with distinct-looking pixels, and helpers to run one transform.
struct Image {
  ImageSpec spec;
  std::vector<uint8_t> pixels;
  Image(int64_t channels, int64_t height, int64_t width, uint32_t seed)
      : spec{channels, height, width, kUInt8},
        pixels(testing::pattern_bytes(static_cast<size_t>(channels * height * width), seed)) {}
  uint8_t at(int64_t c, int64_t y, int64_t x) const {
    return pixels[static_cast<size_t>((c * spec.height + y) * spec.width + x)];
  }
};

template <class T>
std::vector<T> apply(const Transform& transform, const Image& image, SampleKey key) {
  const ImageSpec out_spec = transform.output_spec(image.spec);
  std::vector<T> out(static_cast<size_t>(out_spec.numel()));
  transform.apply(key, image.spec, image.pixels.data(), out.data());
  return out;
}

TEST(ToFloat, ScalesBytesToTheUnitInterval) {
  const Image image(1, 2, 3, 1);
  const std::vector<float> out = apply<float>(ToFloat(), image, {});
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], image.pixels[i] / 255.0f);
  EXPECT_EQ(ToFloat().output_spec(image.spec), (ImageSpec{1, 2, 3, kFloat32}));
  EXPECT_ERROR_CONTAINS(ToFloat().output_spec({1, 2, 3, kFloat32}),
                        "ToFloat: expected uint8 images, got float32 [1, 2, 3]");
}

TEST(Normalize, SubtractsTheMeanAndDividesByTheStdPerChannel) {
  const Normalize normalize({0.5f, 0.25f}, {2.0f, 0.5f});
  const ImageSpec spec{2, 1, 2, kFloat32};
  const std::vector<float> in = {1.0f, 3.0f, 0.25f, 1.25f};
  std::vector<float> out(4);
  normalize.apply({}, spec, in.data(), out.data());
  EXPECT_EQ(out, (std::vector<float>{0.25f, 1.25f, 0.0f, 2.0f}));
  EXPECT_ERROR_CONTAINS(normalize.output_spec({2, 1, 2, kUInt8}),
                        "Normalize: expected float32 images (put ToFloat first");
  EXPECT_ERROR_CONTAINS(normalize.output_spec({3, 1, 2, kFloat32}),
                        "has 2 means and stds, but the images have 3 channels");
  EXPECT_ERROR_CONTAINS(Normalize({0.5f}, {0.0f}), "std must be positive");
  EXPECT_ERROR_CONTAINS(Normalize({0.5f, 0.5f}, {1.0f}), "got 2 means and 1 stds");
  // One mean and std stand for all channels.
  EXPECT_NO_THROW(Normalize({0.5f}, {1.0f}).output_spec({3, 4, 4, kFloat32}));
}

// The padded image's pixel at (y, x), zero outside the original.
uint8_t padded_at(const Image& image, int64_t c, int64_t y, int64_t x, int64_t padding) {
  const int64_t sy = y - padding, sx = x - padding;
  if (sy < 0 || sy >= image.spec.height || sx < 0 || sx >= image.spec.width) return 0;
  return image.at(c, sy, sx);
}

// The crop windows (top, left) of the padded image that `out` equals.
std::vector<std::pair<int64_t, int64_t>> matching_windows(const Image& image,
                                                          const std::vector<uint8_t>& out,
                                                          int64_t out_h, int64_t out_w,
                                                          int64_t padding) {
  std::vector<std::pair<int64_t, int64_t>> matches;
  for (int64_t top = 0; top + out_h <= image.spec.height + 2 * padding; ++top)
    for (int64_t left = 0; left + out_w <= image.spec.width + 2 * padding; ++left) {
      bool equal = true;
      for (int64_t c = 0; c < image.spec.channels && equal; ++c)
        for (int64_t y = 0; y < out_h && equal; ++y)
          for (int64_t x = 0; x < out_w && equal; ++x)
            equal = out[static_cast<size_t>((c * out_h + y) * out_w + x)] ==
                    padded_at(image, c, top + y, left + x, padding);
      if (equal) matches.emplace_back(top, left);
    }
  return matches;
}

TEST(RandomCrop, CutsAWindowOfThePaddedImageAndVisitsEveryPosition) {
  const Image image(2, 6, 5, 3);
  const int64_t padding = 1;
  const RandomCrop crop(Size2(6, 5), padding, /*seed=*/42);
  EXPECT_EQ(crop.output_spec(image.spec), image.spec);
  std::set<std::pair<int64_t, int64_t>> seen;
  for (int64_t index = 0; index < 400; ++index) {
    const std::vector<uint8_t> out = apply<uint8_t>(crop, image, {index, 0});
    const auto matches = matching_windows(image, out, 6, 5, padding);
    ASSERT_EQ(matches.size(), 1u) << "sample " << index << " is not exactly one window";
    seen.insert(matches[0]);
  }
  EXPECT_EQ(seen.size(), 9u) << "all 3x3 window positions should occur in 400 samples";
}

TEST(RandomCrop, NonSquareOutputAndWindowsThatDoNotFit) {
  const Image image(1, 4, 4, 5);
  const RandomCrop crop(Size2(2, 3), 0, 1);
  EXPECT_EQ(crop.output_spec(image.spec), (ImageSpec{1, 2, 3, kUInt8}));
  const std::vector<uint8_t> out = apply<uint8_t>(crop, image, {7, 3});
  EXPECT_EQ(matching_windows(image, out, 2, 3, 0).size(), 1u);
  EXPECT_ERROR_CONTAINS(RandomCrop(9, 2).output_spec(image.spec),
                        "the 9x9 window does not fit in a 4x4 image padded by 2");
  EXPECT_ERROR_CONTAINS(RandomCrop(4, -1), "padding must be non-negative");
}

TEST(RandomCrop, DependsOnlyOnSeedEpochAndIndex) {
  const Image image(3, 8, 8, 9);
  const RandomCrop crop(8, 4, 5);
  int differing_epochs = 0, differing_seeds = 0;
  for (int64_t index = 0; index < 50; ++index) {
    const auto first = apply<uint8_t>(crop, image, {index, 2});
    EXPECT_EQ(first, apply<uint8_t>(crop, image, {index, 2}));  // same key, same result
    EXPECT_EQ(first, apply<uint8_t>(RandomCrop(8, 4, 5), image, {index, 2}));
    differing_epochs += first != apply<uint8_t>(crop, image, {index, 3});
    differing_seeds += first != apply<uint8_t>(RandomCrop(8, 4, 6), image, {index, 2});
  }
  // 81 positions: two draws agree about once in 81, so nearly all of 50 samples differ.
  EXPECT_GT(differing_epochs, 40);
  EXPECT_GT(differing_seeds, 40);
}

TEST(RandomHorizontalFlip, MirrorsWithTheGivenProbability) {
  const Image image(2, 3, 4, 13);
  std::vector<uint8_t> mirrored(image.pixels.size());
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t y = 0; y < 3; ++y)
      for (int64_t x = 0; x < 4; ++x) mirrored[(c * 3 + y) * 4 + x] = image.at(c, y, 3 - x);
  for (double p : {0.0, 0.3, 1.0}) {
    const RandomHorizontalFlip flip(p, 17);
    const int samples = 2000;
    int flipped = 0;
    for (int64_t index = 0; index < samples; ++index) {
      const std::vector<uint8_t> out = apply<uint8_t>(flip, image, {index, 1});
      ASSERT_TRUE(out == image.pixels || out == mirrored) << "sample " << index;
      flipped += out == mirrored;
    }
    if (p == 0.0 || p == 1.0) {
      EXPECT_EQ(flipped, p * samples) << "p = " << p;
    } else {
      // Binomial(2000, p): the standard deviation is at most 23 flips; allow five of them.
      EXPECT_NEAR(flipped, p * samples, 5 * 23) << "p = " << p;
    }
  }
  EXPECT_ERROR_CONTAINS(RandomHorizontalFlip(1.5), "probability must be in [0, 1]");
}

TEST(RandomHorizontalFlip, MirrorsFloatImagesToo) {
  const RandomHorizontalFlip always(1.0);
  const ImageSpec spec{1, 1, 3, kFloat32};
  const std::vector<float> in = {1.5f, 2.5f, 3.5f};
  std::vector<float> out(3);
  always.apply({0, 0}, spec, in.data(), out.data());
  EXPECT_EQ(out, (std::vector<float>{3.5f, 2.5f, 1.5f}));
}

std::shared_ptr<InMemoryDataset> small_dataset(int64_t count, int64_t channels, int64_t size) {
  const std::vector<uint8_t> pixels =
      testing::pattern_bytes(static_cast<size_t>(count * channels * size * size), 21);
  std::vector<int64_t> labels(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) labels[i] = i % 3;
  return std::make_shared<InMemoryDataset>(tensor(pixels, {count, channels, size, size}),
                                           tensor(labels), 3);
}

TEST(TransformDataset, AppliesTheComposedTransformsInOrder) {
  const auto base = small_dataset(5, 3, 6);
  const auto crop = std::make_shared<RandomCrop>(6, 2, 3);
  const auto flip = std::make_shared<RandomHorizontalFlip>(0.5, 3);
  const auto to_float = std::make_shared<ToFloat>();
  const auto normalize = std::make_shared<Normalize>(std::vector<float>{0.1f, 0.2f, 0.3f},
                                                     std::vector<float>{0.5f, 0.6f, 0.7f});
  const auto compose = std::make_shared<Compose>(
      std::vector<std::shared_ptr<const Transform>>{crop, flip, to_float, normalize});
  const TransformDataset dataset(base, compose);
  EXPECT_EQ(dataset.image_spec(), (ImageSpec{3, 6, 6, kFloat32}));
  EXPECT_TRUE(dataset.varies_with_epoch());
  EXPECT_FALSE(TransformDataset(base, to_float).varies_with_epoch());
  EXPECT_EQ(compose->name().substr(0, 20), "Compose(RandomCrop(6");

  for (int64_t index = 0; index < base->size(); ++index) {
    const SampleKey key{index, 4};
    const Example example = dataset.get(index, key.epoch);
    EXPECT_EQ(example.label, index % 3);
    // The same steps by hand.
    const Example original = base->get(index);
    const ImageSpec spec = base->image_spec();
    std::vector<uint8_t> cropped(spec.nbytes()), flipped(spec.nbytes());
    crop->apply(key, spec, original.image.data_ptr(), cropped.data());
    flip->apply(key, spec, cropped.data(), flipped.data());
    std::vector<float> as_float(spec.nbytes()), expected(spec.nbytes());
    to_float->apply(key, spec, flipped.data(), as_float.data());
    normalize->apply(key, {3, 6, 6, kFloat32}, as_float.data(), expected.data());
    EXPECT_EQ(to_vector<float>(example.image), expected) << "sample " << index;
  }
  EXPECT_ERROR_CONTAINS(TransformDataset(base, normalize), "Normalize: expected float32 images");
  EXPECT_ERROR_CONTAINS(dataset.get(5), "Dataset::get: index 5 is out of range for a dataset of 5");
}

}  // namespace
}  // namespace minidl::data
