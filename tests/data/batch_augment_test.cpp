// Batch augmentation on the CPU: equal, bit for bit, to the per-sample transforms with the same
// seed (which is what makes the device path reproduce the host path), and the row gather of the
// device-resident mode.
#include "minidl/data/transforms/batch_augment.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "dataset_files.h"
#include "minidl/data/datasets/in_memory_dataset.h"
#include "minidl/data/loader/gather_rows.h"
#include "minidl/data/transforms/compose.h"
#include "minidl/data/transforms/normalize.h"
#include "minidl/data/transforms/random_crop.h"
#include "minidl/data/transforms/random_horizontal_flip.h"
#include "minidl/data/transforms/to_float.h"
#include "minidl/data/transforms/transform_dataset.h"
#include "test_util.h"

namespace minidl::data {
namespace {

constexpr uint64_t kSeed = 1234;
constexpr int64_t kEpoch = 3;

Tensor byte_images(int64_t batch, int64_t channels, int64_t height, int64_t width) {
  return tensor(testing::pattern_bytes(static_cast<size_t>(batch * channels * height * width), 8),
                {batch, channels, height, width});
}

// Dataset indices that are not the batch positions, as in a shuffled batch.
Tensor scattered_indices(int64_t batch) {
  std::vector<int64_t> indices;
  for (int64_t b = 0; b < batch; ++b) indices.push_back(1000 + 37 * b);
  return tensor(indices);
}

// The per-sample transform applied to image b of `images` as sample indices[b].
Tensor transform_each(const Tensor& images, const Tensor& indices, const Transform& transform) {
  std::vector<Tensor> outputs;
  const ImageSpec spec{images.size(1), images.size(2), images.size(3), images.dtype()};
  const ImageSpec out_spec = transform.output_spec(spec);
  const std::vector<int64_t> keys = to_vector<int64_t>(indices);
  Tensor out =
      empty({images.size(0), out_spec.channels, out_spec.height, out_spec.width}, out_spec.dtype);
  for (int64_t b = 0; b < images.size(0); ++b) {
    const Tensor image = images.select(0, b).contiguous();
    transform.apply({keys[b], kEpoch}, spec, image.data_ptr(), out.select(0, b).data_ptr());
  }
  return out;
}

std::shared_ptr<const Transform> compose(std::vector<std::shared_ptr<const Transform>> parts) {
  return std::make_shared<Compose>(std::move(parts));
}

void expect_identical(const Tensor& actual, const Tensor& expected) {
  ASSERT_EQ(actual.sizes(), expected.sizes());
  ASSERT_EQ(actual.dtype(), expected.dtype());
  EXPECT_TRUE(std::memcmp(actual.contiguous().data_ptr(), expected.contiguous().data_ptr(),
                          expected.nbytes()) == 0)
      << "tensors differ";
}

TEST(BatchAugment, CropFlipNormalizeEqualsThePerSampleTransforms) {
  const Tensor images = byte_images(9, 3, 8, 8);
  const Tensor indices = scattered_indices(9);
  const std::vector<float> mean = {0.49f, 0.48f, 0.45f}, std = {0.25f, 0.24f, 0.26f};
  const AugmentOptions options =
      AugmentOptions().random_crop(2).horizontal_flip(0.5).normalize(mean, std).seed(kSeed);
  const Tensor expected = transform_each(
      images, indices,
      *compose({std::make_shared<RandomCrop>(8, 2, kSeed),
                std::make_shared<RandomHorizontalFlip>(0.5, kSeed), std::make_shared<ToFloat>(),
                std::make_shared<Normalize>(mean, std)}));
  const Tensor augmented = augment_batch(images, indices, kEpoch, options);
  EXPECT_EQ(augmented.dtype(), kFloat32);
  expect_identical(augmented, expected);
}

TEST(BatchAugment, WithoutNormalizationBytesStayBytes) {
  const Tensor images = byte_images(6, 1, 5, 7);
  const Tensor indices = scattered_indices(6);
  const Tensor augmented =
      augment_batch(images, indices, kEpoch,
                    AugmentOptions().random_crop(Size2(4, 6), 1).horizontal_flip(0.7).seed(kSeed));
  EXPECT_EQ(augmented.dtype(), kUInt8);
  expect_identical(augmented,
                   transform_each(images, indices,
                                  *compose({std::make_shared<RandomCrop>(Size2(4, 6), 1, kSeed),
                                            std::make_shared<RandomHorizontalFlip>(0.7, kSeed)})));
}

TEST(BatchAugment, TheThreePartsAloneEqualTheirTransforms) {
  const Tensor images = byte_images(5, 2, 6, 6);
  const Tensor indices = scattered_indices(5);
  expect_identical(random_crop_batch(images, indices, kEpoch, 5, 3, kSeed),
                   transform_each(images, indices, RandomCrop(5, 3, kSeed)));
  expect_identical(random_horizontal_flip_batch(images, indices, kEpoch, 0.5, kSeed),
                   transform_each(images, indices, RandomHorizontalFlip(0.5, kSeed)));
  const Tensor as_float = transform_each(images, indices, ToFloat());
  expect_identical(normalize_batch(as_float, {0.5f}, {0.2f}),
                   transform_each(as_float, indices, Normalize({0.5f}, {0.2f})));
  // uint8 input to normalize_batch is scaled to [0, 1] first, as ToFloat does.
  expect_identical(normalize_batch(images, {0.5f, 0.4f}, {0.2f, 0.3f}),
                   transform_each(as_float, indices, Normalize({0.5f, 0.4f}, {0.2f, 0.3f})));
}

TEST(BatchAugment, FloatImagesAreCroppedFlippedAndNormalized) {
  const Tensor images = transform_each(byte_images(4, 3, 6, 6), scattered_indices(4), ToFloat());
  const Tensor indices = scattered_indices(4);
  const AugmentOptions options =
      AugmentOptions().random_crop(1).horizontal_flip().normalize({0.5f}, {0.25f}).seed(kSeed);
  expect_identical(
      augment_batch(images, indices, kEpoch, options),
      transform_each(images, indices,
                     *compose({std::make_shared<RandomCrop>(6, 1, kSeed),
                               std::make_shared<RandomHorizontalFlip>(0.5, kSeed),
                               std::make_shared<Normalize>(std::vector<float>{0.5f},
                                                           std::vector<float>{0.25f})})));
}

TEST(BatchAugment, RejectsWhatItCannotDo) {
  const Tensor images = byte_images(2, 3, 4, 4);
  const Tensor indices = scattered_indices(2);
  EXPECT_ERROR_CONTAINS(augment_batch(images.select(0, 0), indices, 0, AugmentOptions()),
                        "augment_batch: expected images of shape [B, C, H, W], got [3, 4, 4]");
  EXPECT_ERROR_CONTAINS(augment_batch(images.to(kInt32), indices, 0, AugmentOptions()),
                        "expected uint8 or float32 images, got int32");
  EXPECT_ERROR_CONTAINS(augment_batch(images, scattered_indices(3), 0, AugmentOptions()),
                        "expected int64 sample indices of shape [2]");
  EXPECT_ERROR_CONTAINS(
      augment_batch(images, indices, 0, AugmentOptions().random_crop(Size2(7, 4), 1)),
      "a 7x4 crop does not fit in 4x4 images padded by 1");
  EXPECT_ERROR_CONTAINS(
      augment_batch(images, indices, 0, AugmentOptions().normalize({0.1f, 0.2f}, {1.f, 1.f})),
      "2 means and stds for images with 3 channels");
  EXPECT_ERROR_CONTAINS(AugmentOptions().horizontal_flip(2), "probability must be in [0, 1]");
  EXPECT_ERROR_CONTAINS(AugmentOptions().normalize({0.1f}, {-1.f}), "std must be positive");
}

TEST(GatherRows, PicksRowsOfAnyDtypeInTheGivenOrder) {
  const Tensor source = byte_images(6, 1, 3, 3);
  const Tensor rows = tensor(std::vector<int64_t>{5, 0, 5, 2});
  const Tensor gathered = gather_rows(source, rows);
  ASSERT_EQ(gathered.sizes(), (Shape{4, 1, 3, 3}));
  const std::vector<int64_t> picks = {5, 0, 5, 2};
  for (size_t j = 0; j < picks.size(); ++j)
    expect_identical(gathered.select(0, static_cast<int64_t>(j)), source.select(0, picks[j]));
  const Tensor labels = tensor(std::vector<int64_t>{10, 11, 12, 13, 14, 15});
  EXPECT_EQ(to_vector<int64_t>(gather_rows(labels, rows)), (std::vector<int64_t>{15, 10, 15, 12}));
  EXPECT_ERROR_CONTAINS(gather_rows(source, tensor(std::vector<int32_t>{1})),
                        "gather_rows: expected int64 rows");
}

}  // namespace
}  // namespace minidl::data
