// Batch augmentation and the row gather on a CUDA device equal, bit for bit, their CPU
// versions (which the unit tests check against the per-sample transforms).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "dataset_files.h"
#include "minidl/data/loader/gather_rows.h"
#include "minidl/data/transforms/batch_augment.h"
#include "test_util.h"

namespace minidl::data {
namespace {

constexpr int64_t kEpoch = 2;

Tensor byte_images(int64_t batch, int64_t channels, int64_t height, int64_t width) {
  return tensor(testing::pattern_bytes(static_cast<size_t>(batch * channels * height * width), 4),
                {batch, channels, height, width});
}

Tensor sample_indices(int64_t batch) {
  std::vector<int64_t> indices;
  for (int64_t b = 0; b < batch; ++b) indices.push_back(50000 - 7 * b);
  return tensor(indices);
}

void expect_identical(const Tensor& cuda_result, const Tensor& cpu_result) {
  ASSERT_TRUE(cuda_result.is_cuda());
  const Tensor back = cuda_result.cpu();
  ASSERT_EQ(back.sizes(), cpu_result.sizes());
  ASSERT_EQ(back.dtype(), cpu_result.dtype());
  EXPECT_EQ(std::memcmp(back.data_ptr(), cpu_result.data_ptr(), back.nbytes()), 0);
}

TEST(BatchAugmentCuda, MatchesTheCpuForEveryDtypeCombination) {
  SKIP_WITHOUT_CUDA();
  const Device gpu(kCUDA);
  const Tensor images = byte_images(64, 3, 32, 32);
  const Tensor indices = sample_indices(64);
  const std::vector<AugmentOptions> cases = {
      AugmentOptions().random_crop(4).horizontal_flip().seed(1),  // u8 -> u8
      AugmentOptions()
          .random_crop(4)
          .horizontal_flip()
          .normalize({0.49f, 0.48f, 0.45f}, {0.25f, 0.24f, 0.26f})
          .seed(2),
      AugmentOptions().random_crop(Size2(24, 28), 2).seed(3),  // smaller
      AugmentOptions().horizontal_flip(0.3).normalize({0.5f}, {0.2f}).seed(4)};
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "case " << i);
    expect_identical(augment_batch(images.to(gpu), indices.to(gpu), kEpoch, cases[i]),
                     augment_batch(images, indices, kEpoch, cases[i]));
  }
  const Tensor as_float = images.to(kFloat32);  // float input: crop, flip, normalise
  expect_identical(augment_batch(as_float.to(gpu), indices.to(gpu), kEpoch, cases[1]),
                   augment_batch(as_float, indices, kEpoch, cases[1]));
}

TEST(BatchAugmentCuda, RefusesIndicesOnAnotherDevice) {
  SKIP_WITHOUT_CUDA();
  EXPECT_ERROR_CONTAINS(
      augment_batch(byte_images(2, 1, 4, 4).cuda(), sample_indices(2), 0, AugmentOptions()),
      "augment_batch: images are on cuda:0 but the sample indices on cpu");
}

TEST(GatherRowsCuda, MatchesTheCpuForWordAndByteRows) {
  SKIP_WITHOUT_CUDA();
  const Tensor rows = tensor(std::vector<int64_t>{9, 0, 3, 3, 7});
  for (const Shape& shape : {Shape{10, 1, 28, 28}, Shape{10, 3, 5, 5}, Shape{10}}) {
    const Tensor source =
        tensor(testing::pattern_bytes(static_cast<size_t>(shape_numel(shape)), 6), shape);
    expect_identical(gather_rows(source.cuda(), rows.cuda()), gather_rows(source, rows));
  }
  const Tensor labels = arange(0, 10, 1, kInt64);
  expect_identical(gather_rows(labels.cuda(), rows.cuda()), gather_rows(labels, rows));
}

}  // namespace
}  // namespace minidl::data
