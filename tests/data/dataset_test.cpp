// In-memory and synthetic datasets.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "minidl/data/datasets/in_memory_dataset.h"
#include "minidl/data/datasets/synthetic_dataset.h"
#include "test_util.h"

namespace minidl::data {
namespace {

TEST(InMemoryDataset, GetReturnsTheImageAndLabel) {
  const Tensor images = arange(0, 2 * 3 * 2 * 2, 1, kUInt8).reshape({2, 3, 2, 2});
  const InMemoryDataset dataset(images, tensor(std::vector<int64_t>{4, 1}), 5);
  EXPECT_EQ(dataset.size(), 2);
  EXPECT_EQ(dataset.image_spec(), (ImageSpec{3, 2, 2, kUInt8}));
  const Example second = dataset.get(1);
  EXPECT_EQ(second.label, 1);
  EXPECT_EQ(second.image.sizes(), (Shape{3, 2, 2}));
  EXPECT_EQ(to_vector<int64_t>(second.image), to_vector<int64_t>(images.select(0, 1)));
  EXPECT_ERROR_CONTAINS(dataset.get(-1), "index -1 is out of range for a dataset of 2 samples");
}

TEST(InMemoryDataset, ValidatesItsTensors) {
  const Tensor images = zeros({2, 1, 2, 2}, kUInt8);
  EXPECT_ERROR_CONTAINS(
      InMemoryDataset(zeros({2, 2, 2}, kUInt8), tensor(std::vector<int64_t>{0, 0}), 2),
      "expected images of shape [N, C, H, W], got [2, 2, 2]");
  EXPECT_ERROR_CONTAINS(InMemoryDataset(images, tensor(std::vector<int32_t>{0, 0}), 2),
                        "expected int64 labels of shape [N], got int32 [2]");
  EXPECT_ERROR_CONTAINS(InMemoryDataset(images, tensor(std::vector<int64_t>{0}), 2),
                        "2 images but 1 labels");
  EXPECT_ERROR_CONTAINS(InMemoryDataset(images, tensor(std::vector<int64_t>{0, 2}), 2),
                        "label 2 of sample 1 is outside [0, 2)");
}

TEST(SyntheticDataset, IsDeterministicInItsSeed) {
  const auto a = make_synthetic_dataset(50, {3, 8, 8}, 10, 1);
  const auto b = make_synthetic_dataset(50, {3, 8, 8}, 10, 1);
  const auto c = make_synthetic_dataset(50, {3, 8, 8}, 10, 2);
  EXPECT_EQ(a->image_spec(), (ImageSpec{3, 8, 8, kUInt8}));
  EXPECT_EQ(to_vector<uint8_t>(a->images()), to_vector<uint8_t>(b->images()));
  EXPECT_EQ(to_vector<int64_t>(a->labels()), to_vector<int64_t>(b->labels()));
  EXPECT_NE(to_vector<uint8_t>(a->images()), to_vector<uint8_t>(c->images()));
  const std::vector<int64_t> labels = to_vector<int64_t>(a->labels());
  for (int64_t label : labels) EXPECT_TRUE(label >= 0 && label < 10);
  EXPECT_ERROR_CONTAINS(make_synthetic_dataset(5, {3, 0, 8}, 10), "positive sizes");
  EXPECT_ERROR_CONTAINS(make_synthetic_dataset(5, {1, 8, 8}, 0), "num_classes must be in");
}

TEST(SyntheticDataset, SamplesOfOneClassLookAlike) {
  // Each sample averages its class's prototype with noise, so two samples of one class differ
  // less, on average, than samples of different classes: there is something to learn.
  const auto dataset = make_synthetic_dataset(200, {1, 16, 16}, 4, 9);
  const std::vector<int64_t> labels = to_vector<int64_t>(dataset->labels());
  const std::vector<double> pixels = to_vector<double>(dataset->images());
  const size_t numel = 256;
  double same = 0, different = 0;
  int same_pairs = 0, different_pairs = 0;
  for (size_t i = 0; i < 60; ++i)
    for (size_t j = i + 1; j < 60; ++j) {
      double distance = 0;
      for (size_t p = 0; p < numel; ++p)
        distance += std::abs(pixels[i * numel + p] - pixels[j * numel + p]);
      if (labels[i] == labels[j]) {
        same += distance;
        ++same_pairs;
      } else {
        different += distance;
        ++different_pairs;
      }
    }
  ASSERT_GT(same_pairs, 0);
  ASSERT_GT(different_pairs, 0);
  EXPECT_LT(same / same_pairs, 0.8 * different / different_pairs);
}

}  // namespace
}  // namespace minidl::data
