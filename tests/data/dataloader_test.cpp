// The DataLoader on the CPU: order and contents independent of the worker count, every index
// once per epoch, epochs, augmentation and the device-resident mode against the per-sample
// path, and clean endings: leaving early, destroying the loader, an exception in the loop, a
// throwing worker and a stuck worker.
#include "minidl/data/dataloader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include "minidl/core/cuda/pinned_allocator.h"
#include "minidl/data/datasets/synthetic_dataset.h"
#include "minidl/data/samplers/distributed_sampler.h"
#include "minidl/data/samplers/sequential_sampler.h"
#include "minidl/data/transforms/compose.h"
#include "minidl/data/transforms/normalize.h"
#include "minidl/data/transforms/random_crop.h"
#include "minidl/data/transforms/random_horizontal_flip.h"
#include "minidl/data/transforms/to_float.h"
#include "minidl/data/transforms/transform_dataset.h"
#include "test_util.h"

namespace minidl::data {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kSeed = 99;

std::shared_ptr<InMemoryDataset> synthetic(int64_t size = 103) {
  return make_synthetic_dataset(size, {3, 8, 8}, 10, 5);
}

// Random crop and flip, so that a sample's contents depend on its epoch and index.
std::shared_ptr<TransformDataset> augmented(std::shared_ptr<const Dataset> base) {
  return std::make_shared<TransformDataset>(
      std::move(base), std::make_shared<Compose>(std::vector<std::shared_ptr<const Transform>>{
                           std::make_shared<RandomCrop>(8, 2, kSeed),
                           std::make_shared<RandomHorizontalFlip>(0.5, kSeed)}));
}

// All batches of one pass.
std::vector<Batch> one_pass(DataLoader& loader) {
  std::vector<Batch> batches;
  for (Batch& batch : loader) batches.push_back(batch);
  return batches;
}

void expect_same_batches(const std::vector<Batch>& actual, const std::vector<Batch>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t k = 0; k < expected.size(); ++k) {
    SCOPED_TRACE(::testing::Message() << "batch " << k);
    EXPECT_EQ(actual[k].batch_index, expected[k].batch_index);
    EXPECT_EQ(actual[k].epoch, expected[k].epoch);
    EXPECT_TRUE(testing::bitwise_equal(actual[k].indices, expected[k].indices));
    EXPECT_TRUE(testing::bitwise_equal(actual[k].labels, expected[k].labels));
    EXPECT_TRUE(testing::bitwise_equal(actual[k].images, expected[k].images));
  }
}

TEST(DataLoader, BatchesAreIdenticalForZeroOneAndFourWorkers) {
  const auto dataset = augmented(synthetic());
  const auto options = DataLoaderOptions(10).shuffle(true).seed(kSeed);
  DataLoader inline_loader(dataset, DataLoaderOptions(options).num_workers(0));
  DataLoader one_worker(dataset, DataLoaderOptions(options).num_workers(1));
  DataLoader four_workers(dataset, DataLoaderOptions(options).num_workers(4).prefetch_depth(3));
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    SCOPED_TRACE(::testing::Message() << "epoch " << epoch);
    const std::vector<Batch> reference = one_pass(inline_loader);
    ASSERT_EQ(reference.size(), 11u);  // 103 samples in batches of 10
    expect_same_batches(one_pass(one_worker), reference);
    expect_same_batches(one_pass(four_workers), reference);
  }
}

TEST(DataLoader, BatchesHoldTheDatasetSamplesOfTheirEpoch) {
  const auto dataset = augmented(synthetic());
  DataLoader loader(dataset, DataLoaderOptions(16).shuffle(true).num_workers(2));
  loader.set_epoch(4);
  for (const Batch& batch : loader) {
    EXPECT_EQ(batch.epoch, 4);
    const std::vector<int64_t> indices = to_vector<int64_t>(batch.indices);
    const std::vector<int64_t> labels = to_vector<int64_t>(batch.labels);
    for (size_t b = 0; b < indices.size(); ++b) {
      const Example example = dataset->get(indices[b], 4);
      EXPECT_EQ(labels[b], example.label);
      EXPECT_TRUE(
          testing::bitwise_equal(batch.images.select(0, static_cast<int64_t>(b)), example.image))
          << "sample " << indices[b];
    }
  }
}

TEST(DataLoader, EveryIndexExactlyOncePerEpochAndTheLastBatchShortUnlessDropped) {
  const auto dataset = synthetic(103);
  for (int workers : {0, 1, 4}) {
    SCOPED_TRACE(::testing::Message() << workers << " workers");
    DataLoader loader(dataset, DataLoaderOptions(10).shuffle(true).num_workers(workers));
    EXPECT_EQ(loader.num_batches(), 11);
    std::vector<std::vector<int64_t>> orders;
    for (int epoch = 0; epoch < 2; ++epoch) {
      std::vector<int64_t> seen;
      std::vector<int64_t> sizes;
      for (const Batch& batch : loader) {
        sizes.push_back(batch.size());
        EXPECT_EQ(batch.images.sizes(), (Shape{batch.size(), 3, 8, 8}));
        const std::vector<int64_t> indices = to_vector<int64_t>(batch.indices);
        seen.insert(seen.end(), indices.begin(), indices.end());
      }
      EXPECT_EQ(sizes.back(), 3);
      std::vector<int64_t> sorted_seen = seen;
      std::sort(sorted_seen.begin(), sorted_seen.end());
      std::vector<int64_t> all(103);
      std::iota(all.begin(), all.end(), int64_t{0});
      EXPECT_EQ(sorted_seen, all);
      orders.push_back(seen);
    }
    EXPECT_NE(orders[0], orders[1]) << "each pass runs the next epoch, reshuffled";
  }
  DataLoader dropping(dataset, DataLoaderOptions(10).drop_last(true).num_workers(2));
  EXPECT_EQ(dropping.num_batches(), 10);
  int64_t samples = 0;
  for (const Batch& batch : dropping) {
    EXPECT_EQ(batch.size(), 10);
    samples += batch.size();
  }
  EXPECT_EQ(samples, 100);
}

TEST(DataLoader, SetEpochReplaysAnEpoch) {
  DataLoader loader(synthetic(), DataLoaderOptions(25).shuffle(true).num_workers(2));
  EXPECT_EQ(loader.epoch(), 0);
  const std::vector<Batch> epoch0 = one_pass(loader);
  EXPECT_EQ(loader.epoch(), 1);
  const std::vector<Batch> epoch1 = one_pass(loader);
  EXPECT_FALSE(testing::bitwise_equal(epoch0[0].indices, epoch1[0].indices));
  loader.set_epoch(0);
  expect_same_batches(one_pass(loader), epoch0);
}

// A run resumed mid-epoch gets the rest of the epoch an uninterrupted pass would have given,
// augmentation included, with any number of workers; the pass after it starts at batch 0.
TEST(DataLoader, StartBatchResumesAnEpochWhereItLeftOff) {
  for (int workers : {0, 2}) {
    SCOPED_TRACE(workers);
    DataLoader loader(augmented(synthetic()),
                      DataLoaderOptions(10).shuffle(true).seed(kSeed).num_workers(workers));
    loader.set_epoch(3);
    const std::vector<Batch> whole = one_pass(loader);
    ASSERT_EQ(whole.size(), 11u);
    loader.set_epoch(3);
    loader.set_start_batch(7);
    const std::vector<Batch> rest = one_pass(loader);
    ASSERT_EQ(rest.size(), 4u);
    EXPECT_EQ(rest.front().batch_index, 7);
    expect_same_batches(rest, std::vector<Batch>(whole.begin() + 7, whole.end()));
    loader.set_epoch(3);
    EXPECT_EQ(one_pass(loader).size(), 11u);
    loader.set_start_batch(11);
    EXPECT_TRUE(one_pass(loader).empty());
    loader.set_start_batch(12);
    EXPECT_ERROR_CONTAINS(loader.begin(),
                          "DataLoader: start batch 12 is outside epoch 5, which has 11 batches");
  }
}

TEST(DataLoader, PinnedBatchesComeFromThePinnedPoolAndAreRecycled) {
  const auto dataset = synthetic();
  DataLoader pinned(dataset, DataLoaderOptions(10).num_workers(2));
  DataLoader plain(dataset, DataLoaderOptions(10).num_workers(2).pin_memory(false));
  for (const Batch& batch : pinned) {
    EXPECT_TRUE(cuda::is_pinned(batch.images.data_ptr()));
    EXPECT_TRUE(cuda::is_pinned(batch.labels.data_ptr()));
  }
  for (const Batch& batch : plain) EXPECT_FALSE(cuda::is_pinned(batch.images.data_ptr()));
  // Blocks are recycled: over five passes of 11 batches (three tensors each) the pool asks the
  // system only for the blocks alive at once, at most prefetch_depth + 1 batches of each of
  // the two batch sizes, not for 165.
  const int64_t depth = 4;  // two workers, two batches each
  const uint64_t before = cuda::pinned_memory_stats().num_host_allocations;
  for (int pass = 0; pass < 5; ++pass)
    for (const Batch& batch : pinned) EXPECT_EQ(batch.images.dim(), 4);
  EXPECT_LE(cuda::pinned_memory_stats().num_host_allocations - before, 3u * (depth + 2));
}

TEST(DataLoader, AugmentationEqualsThePerSampleTransforms) {
  const auto base = synthetic();
  const std::vector<float> mean = {0.5f, 0.4f, 0.3f}, std = {0.2f, 0.25f, 0.3f};
  const auto per_sample = std::make_shared<TransformDataset>(
      base, std::make_shared<Compose>(std::vector<std::shared_ptr<const Transform>>{
                std::make_shared<RandomCrop>(8, 2, kSeed),
                std::make_shared<RandomHorizontalFlip>(0.5, kSeed), std::make_shared<ToFloat>(),
                std::make_shared<Normalize>(mean, std)}));
  const AugmentOptions augment =
      AugmentOptions().random_crop(2).horizontal_flip(0.5).normalize(mean, std).seed(kSeed);
  DataLoader reference(per_sample, DataLoaderOptions(16).shuffle(true).num_workers(2));
  DataLoader batched(base, DataLoaderOptions(16).shuffle(true).num_workers(2).augment(augment));
  DataLoader resident(base,
                      DataLoaderOptions(16).shuffle(true).device_resident(true).augment(augment));
  for (int epoch = 0; epoch < 2; ++epoch) {
    const std::vector<Batch> expected = one_pass(reference);
    expect_same_batches(one_pass(batched), expected);
    expect_same_batches(one_pass(resident), expected);
  }
}

TEST(DataLoader, DeviceResidentModeGivesTheSameBatches) {
  const auto dataset = synthetic();
  DataLoader workers(dataset, DataLoaderOptions(32).shuffle(true).num_workers(2));
  DataLoader resident(dataset, DataLoaderOptions(32).shuffle(true).device_resident(true));
  expect_same_batches(one_pass(resident), one_pass(workers));
  EXPECT_ERROR_CONTAINS(
      DataLoader(augmented(dataset), DataLoaderOptions(8).device_resident(true)),
      "device_resident uploads the dataset once, but this dataset's images change with the epoch");
}

TEST(DataLoader, TakesADistributedSampler) {
  const auto dataset = synthetic(50);
  std::vector<int64_t> seen;
  for (int rank = 0; rank < 3; ++rank) {
    auto sampler = std::make_shared<DistributedSampler>(
        dataset->size(), DistributedSamplerOptions(rank, 3).drop_last(true).seed(kSeed));
    DataLoader loader(dataset, sampler, DataLoaderOptions(4).num_workers(2));
    EXPECT_EQ(loader.num_batches(), 4);  // 16 samples per rank
    for (const Batch& batch : loader) {
      const std::vector<int64_t> indices = to_vector<int64_t>(batch.indices);
      seen.insert(seen.end(), indices.begin(), indices.end());
    }
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end()) << "shards overlap";
  EXPECT_EQ(seen.size(), 48u);
  EXPECT_ERROR_CONTAINS(DataLoader(dataset, std::make_shared<SequentialSampler>(50),
                                   DataLoaderOptions(4).shuffle(true)),
                        "shuffle(true) cannot be combined with an explicit sampler");
}

TEST(DataLoader, RejectsBadOptions) {
  const auto dataset = synthetic(10);
  EXPECT_ERROR_CONTAINS(DataLoader(dataset, DataLoaderOptions(0)),
                        "batch_size must be at least 1, got 0");
  EXPECT_ERROR_CONTAINS(DataLoader(dataset, DataLoaderOptions(2).num_workers(-1)),
                        "num_workers must be non-negative");
  if (!cuda::is_available())
    EXPECT_ERROR_CONTAINS(DataLoader(dataset, DataLoaderOptions(2).device(Device(kCUDA))),
                          "DataLoader: the target device is cuda:0, but");
}

// ---- endings ----

// Counts reads, and can be told to throw at one index or block at one until released, or to
// block in image_spec() on any thread but the one that made it (a worker's start on a batch).
class InstrumentedDataset final : public Dataset {
 public:
  explicit InstrumentedDataset(std::shared_ptr<const Dataset> base) : base_(std::move(base)) {}
  int64_t size() const override { return base_->size(); }
  ImageSpec image_spec() const override {
    if (block_spec_in_workers_ && std::this_thread::get_id() != owner_) {
      ++active_reads_;
      struct Done {
        std::atomic<int>& active;
        ~Done() { --active; }
      } done{active_reads_};
      wait_for_release();
    }
    return base_->image_spec();
  }
  int64_t read(int64_t index, int64_t epoch, void* image) const override {
    ++reads_;
    ++active_reads_;
    struct Done {
      std::atomic<int>& active;
      ~Done() { --active; }
    } done{active_reads_};
    if (index == throw_at_) throw Error("corrupt record for sample " + std::to_string(index));
    if (index == block_at_) wait_for_release();
    return base_->read(index, epoch, image);
  }

  int64_t throw_at_ = -1;
  int64_t block_at_ = -1;
  bool block_spec_in_workers_ = false;
  mutable std::atomic<int64_t> reads_{0};
  mutable std::atomic<int> active_reads_{0};
  void release() {
    {
      std::lock_guard lock(mutex_);
      release_ = true;
    }
    released_.notify_all();
  }

 private:
  void wait_for_release() const {
    std::unique_lock lock(mutex_);
    released_.wait(lock, [&] { return release_; });
  }

  std::shared_ptr<const Dataset> base_;
  const std::thread::id owner_ = std::this_thread::get_id();
  mutable std::mutex mutex_;
  mutable std::condition_variable released_;
  bool release_ = false;
};

TEST(DataLoader, LeavingTheLoopEarlyStopsTheWorkers) {
  auto dataset = std::make_shared<InstrumentedDataset>(synthetic(2000));
  {
    DataLoader loader(dataset, DataLoaderOptions(10).num_workers(4).prefetch_depth(4));
    int taken = 0;
    for (const Batch& batch : loader) {
      EXPECT_EQ(batch.batch_index, taken);
      if (++taken == 2) break;
    }
    // The loop has ended: the workers are joined, so no read is running or will start.
    EXPECT_EQ(dataset->active_reads_.load(), 0);
    const int64_t reads = dataset->reads_.load();
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(dataset->reads_.load(), reads);
    // Two batches taken plus at most prefetch_depth being built: far from the 2000 samples.
    EXPECT_LE(reads, (2 + 4 + 1) * 10);
    // The loader stays usable: a new pass starts from the first batch.
    EXPECT_EQ(loader.begin()->batch_index, 0);
  }
}

TEST(DataLoader, DestroyingTheLoaderMidEpochStopsTheIterator) {
  auto dataset = std::make_shared<InstrumentedDataset>(synthetic(500));
  auto loader = std::make_unique<DataLoader>(dataset, DataLoaderOptions(10).num_workers(3));
  DataLoader::Iterator it = loader->begin();
  ++it;
  EXPECT_EQ(it->batch_index, 1);
  loader.reset();
  EXPECT_EQ(dataset->active_reads_.load(), 0);
  EXPECT_ERROR_CONTAINS(++it, "this iterator's pass was stopped");
  // begin() again on a loader stops the previous pass the same way.
  DataLoader again(dataset, DataLoaderOptions(10).num_workers(2));
  DataLoader::Iterator first = again.begin();
  DataLoader::Iterator second = again.begin();
  EXPECT_ERROR_CONTAINS(*first, "this iterator's pass was stopped");
  EXPECT_EQ(second->batch_index, 0);
}

TEST(DataLoader, AnExceptionInTheTrainingLoopEndsThePassCleanly) {
  auto dataset = std::make_shared<InstrumentedDataset>(synthetic(500));
  DataLoader loader(dataset, DataLoaderOptions(10).num_workers(4));
  EXPECT_THROW(
      {
        for (const Batch& batch : loader)
          if (batch.batch_index == 3) throw std::runtime_error("the model diverged");
      },
      std::runtime_error);
  EXPECT_EQ(dataset->active_reads_.load(), 0);
  EXPECT_EQ(one_pass(loader).size(), 50u);
}

class ThrowingWorker : public ::testing::TestWithParam<int> {};  // parameter: workers

TEST_P(ThrowingWorker, RethrowsInTheCallerWithTheMessageAndSampleIndex) {
  auto dataset = std::make_shared<InstrumentedDataset>(synthetic(200));
  dataset->throw_at_ = 37;
  DataLoader loader(dataset, DataLoaderOptions(8).num_workers(GetParam()));
  std::vector<int64_t> delivered;
  try {
    for (const Batch& batch : loader) delivered.push_back(batch.batch_index);
    ADD_FAILURE() << "expected the reader's error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("corrupt record for sample 37"), std::string::npos) << message;
    EXPECT_NE(message.find("reading sample 37 (batch 4 of epoch 0) failed"), std::string::npos)
        << message;
    if (GetParam() > 0) EXPECT_NE(message.find("DataLoader worker "), std::string::npos) << message;
  }
  // Batches before the failing one (samples 0-31) were delivered, in order.
  EXPECT_EQ(delivered, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(dataset->active_reads_.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(Workers, ThrowingWorker, ::testing::Values(0, 1, 4));

// Releases the blocked reads of a loader's abandoned workers and expects them to end.
void release_and_expect_no_reads_left(InstrumentedDataset& dataset) {
  dataset.release();
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (dataset.active_reads_.load() != 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  EXPECT_EQ(dataset.active_reads_.load(), 0);
  std::this_thread::sleep_for(10ms);  // let them finish returning, before the dataset is released
}

TEST(DataLoader, AStuckWorkerBecomesAnErrorNotAHang) {
  auto dataset = std::make_shared<InstrumentedDataset>(synthetic(200));
  dataset->block_at_ = 13;
  const auto start = std::chrono::steady_clock::now();
  {
    // Short, to keep the suite fast, yet far longer than building a batch of 8 small images.
    // Pageable batches: on a GPU machine running many tests at once, a worker's first pinned
    // allocation alone has taken longer than 300 ms (the next test covers that case).
    DataLoader loader(dataset,
                      DataLoaderOptions(8).num_workers(2).timeout(300ms).pin_memory(false));
    std::vector<int64_t> delivered;
    try {
      for (const Batch& batch : loader) delivered.push_back(batch.batch_index);
      ADD_FAILURE() << "expected a timeout";
    } catch (const Error& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("DataLoader: batch 1 of epoch 0 was not ready after 300 ms"),
                std::string::npos)
          << message;
      EXPECT_NE(message.find("is stuck reading sample 13"), std::string::npos) << message;
    }
    EXPECT_EQ(delivered, (std::vector<int64_t>{0}));
  }
  // The pass ended and the loader was destroyed without waiting for the stuck read beyond the
  // timeout (the worker was left behind).
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(dataset->active_reads_.load(), 1);
  // Once its read returns, the abandoned worker stops on its own.
  release_and_expect_no_reads_left(*dataset);
}

TEST(DataLoader, ALateBatchWhoseWorkerHasReadNothingSaysSo) {
  auto dataset = std::make_shared<InstrumentedDataset>(synthetic(40));
  dataset->block_spec_in_workers_ = true;  // each worker stops before its batch's first read
  {
    DataLoader loader(dataset,
                      DataLoaderOptions(8).num_workers(1).timeout(100ms).pin_memory(false));
    EXPECT_ERROR_CONTAINS(
        loader.begin(),
        "batch 0 of epoch 0 was not ready after 100 ms (DataLoaderOptions::timeout); worker 0 "
        "has not read a sample of its batch yet (it is allocating the batch or selecting its GPU)");
  }
  EXPECT_EQ(dataset->reads_.load(), 0);
  release_and_expect_no_reads_left(*dataset);
}

}  // namespace
}  // namespace minidl::data
