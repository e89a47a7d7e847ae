// The DataLoader with a CUDA target: the same batches as on the CPU, through the copy stream,
// the device-resident mode and device augmentation; pinned blocks are recycled; workers run on
// the device of the thread that starts them.
#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "minidl/core/cuda/device.h"
#include "minidl/core/cuda/pinned_allocator.h"
#include "minidl/core/cuda/stream.h"
#include "minidl/data/dataloader.h"
#include "minidl/data/datasets/synthetic_dataset.h"
#include "test_util.h"

namespace minidl::data {
namespace {

std::vector<Batch> one_pass(DataLoader& loader) {
  std::vector<Batch> batches;
  for (Batch& batch : loader) batches.push_back(batch);
  return batches;
}

void expect_same_batches_on(const std::vector<Batch>& actual, const std::vector<Batch>& expected,
                            Device device) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t k = 0; k < expected.size(); ++k) {
    SCOPED_TRACE(::testing::Message() << "batch " << k);
    EXPECT_EQ(actual[k].images.device(), device);
    EXPECT_EQ(actual[k].labels.device(), device);
    EXPECT_EQ(actual[k].indices.device(), device);
    EXPECT_TRUE(testing::bitwise_equal(actual[k].images, expected[k].images));
    EXPECT_TRUE(testing::bitwise_equal(actual[k].labels, expected[k].labels));
    EXPECT_TRUE(testing::bitwise_equal(actual[k].indices, expected[k].indices));
  }
}

const AugmentOptions kAugment = AugmentOptions()
                                    .random_crop(4)
                                    .horizontal_flip()
                                    .normalize({0.49f, 0.48f, 0.45f}, {0.25f, 0.24f, 0.26f})
                                    .seed(7);

TEST(DataLoaderCuda, CopiedResidentAndAugmentedBatchesEqualTheCpuOnes) {
  SKIP_WITHOUT_CUDA();
  const Device gpu(kCUDA);
  const auto dataset = make_synthetic_dataset(1000, {3, 32, 32}, 10, 3);
  const auto options = DataLoaderOptions(128).shuffle(true).seed(5);
  for (bool augment : {false, true}) {
    SCOPED_TRACE(augment ? "with augmentation" : "without augmentation");
    auto with = [&](DataLoaderOptions o) { return augment ? o.augment(kAugment) : o; };
    DataLoader cpu_loader(dataset, with(DataLoaderOptions(options).num_workers(2)));
    DataLoader inline_copy(dataset, with(DataLoaderOptions(options).device(gpu)));
    DataLoader worker_copy(dataset, with(DataLoaderOptions(options).num_workers(2).device(gpu)));
    DataLoader resident(dataset,
                        with(DataLoaderOptions(options).device_resident(true).device(gpu)));
    for (int epoch = 0; epoch < 2; ++epoch) {
      const std::vector<Batch> expected = one_pass(cpu_loader);
      expect_same_batches_on(one_pass(inline_copy), expected, gpu);
      expect_same_batches_on(one_pass(worker_copy), expected, gpu);
      expect_same_batches_on(one_pass(resident), expected, gpu);
    }
  }
}

TEST(DataLoaderCuda, BatchesAreUsableOnANonDefaultComputeStream) {
  SKIP_WITHOUT_CUDA();
  const Device gpu(kCUDA);
  const auto dataset = make_synthetic_dataset(300, {1, 28, 28}, 10, 4);
  DataLoader reference(dataset, DataLoaderOptions(64).num_workers(1));
  const std::vector<Batch> expected = one_pass(reference);
  const cuda::Stream compute = cuda::Stream::create(0);
  cuda::StreamGuard guard(compute);
  DataLoader loader(dataset, DataLoaderOptions(64).num_workers(2).device(gpu));
  std::vector<Batch> batches;
  for (Batch& batch : loader) batches.push_back(batch);
  compute.synchronize();
  expect_same_batches_on(batches, expected, gpu);
}

TEST(DataLoaderCuda, PinnedBlocksAreRecycledAfterTheirCopies) {
  SKIP_WITHOUT_CUDA();
  const auto dataset = make_synthetic_dataset(2000, {3, 32, 32}, 10, 4);
  DataLoader loader(dataset, DataLoaderOptions(100).num_workers(2).device(Device(kCUDA)));
  one_pass(loader);
  const uint64_t before = cuda::pinned_memory_stats().num_host_allocations;
  for (int pass = 0; pass < 3; ++pass) one_pass(loader);
  cuda::synchronize();
  // 60 batches of three tensors went through; only blocks alive at once are ever allocated.
  EXPECT_LE(cuda::pinned_memory_stats().num_host_allocations - before, 3u * 8);
  EXPECT_TRUE(cuda::pinned_memory_is_page_locked());
}

TEST(DataLoaderCuda, LeavingEarlyWithCopiesInFlightEndsCleanly) {
  SKIP_WITHOUT_CUDA();
  const auto dataset = make_synthetic_dataset(5000, {3, 32, 32}, 10, 4);
  DataLoader loader(dataset, DataLoaderOptions(256).num_workers(4).device(Device(kCUDA)));
  int taken = 0;
  for (const Batch& batch : loader) {
    EXPECT_TRUE(batch.images.is_cuda());
    if (++taken == 3) break;
  }
  cuda::synchronize();
  EXPECT_EQ(one_pass(loader).size(), 20u);
}

// Records the CUDA device current on the thread that reads each sample.
class DeviceRecordingDataset final : public Dataset {
 public:
  explicit DeviceRecordingDataset(std::shared_ptr<const Dataset> inner)
      : inner_(std::move(inner)) {}
  int64_t size() const override { return inner_->size(); }
  ImageSpec image_spec() const override { return inner_->image_spec(); }
  int64_t read(int64_t index, int64_t epoch, void* image) const override {
    {
      std::lock_guard lock(mutex_);
      devices_.insert(cuda::current_device());
    }
    return inner_->read(index, epoch, image);
  }
  std::set<int> devices() const {
    std::lock_guard lock(mutex_);
    return devices_;
  }

 private:
  std::shared_ptr<const Dataset> inner_;
  mutable std::mutex mutex_;
  mutable std::set<int> devices_;
};

// A worker allocates pinned memory and queries events; on a thread that never selected a
// device that would put a context on GPU 0, in every rank under mpirun.
TEST(DataLoaderCuda, WorkersRunOnTheDeviceOfTheThreadThatStartsThem) {
  SKIP_WITHOUT_CUDA();
  if (cuda::device_count() < 2)
    GTEST_SKIP() << "needs two CUDA devices (with one, every thread is on device 0), found "
                 << cuda::device_count();
  const int last = cuda::device_count() - 1;
  const int previous = cuda::current_device();
  cuda::set_device(last);
  auto dataset =
      std::make_shared<DeviceRecordingDataset>(make_synthetic_dataset(512, {1, 28, 28}, 10, 4));
  DataLoader loader(dataset, DataLoaderOptions(64).num_workers(3).device(Device(kCUDA, last)));
  EXPECT_EQ(one_pass(loader).size(), 8u);
  cuda::set_device(previous);
  EXPECT_EQ(dataset->devices(), std::set<int>{last});
}

}  // namespace
}  // namespace minidl::data
