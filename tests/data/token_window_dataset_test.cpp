// TokenWindowDataset: random windows drawn from (seed, epoch, index) alone, so the same batches
// for any worker count and different ones for another seed; DistributedSampler shards on two
// ranks; consecutive windows for evaluation; split_token_windows; the option errors.
#include "minidl/data/datasets/token_window_dataset.h"

#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <set>
#include <vector>

#include "minidl/data/dataloader.h"
#include "minidl/data/samplers/distributed_sampler.h"
#include "test_util.h"

namespace minidl::data {
namespace {

// tokens[i] = i, so a window's first token is its start.
std::vector<uint16_t> counting_tokens(size_t count) {
  std::vector<uint16_t> tokens(count);
  std::iota(tokens.begin(), tokens.end(), uint16_t{0});
  return tokens;
}

std::shared_ptr<TokenWindowDataset> random_windows(size_t tokens, TokenWindowOptions options) {
  return std::make_shared<TokenWindowDataset>(counting_tokens(tokens), options);
}

// Every batch's images of one pass over `loader` in epoch `epoch`, concatenated.
std::vector<int64_t> pass_windows(DataLoader& loader, int64_t epoch) {
  loader.set_epoch(epoch);
  std::vector<int64_t> values;
  for (Batch& batch : loader) {
    const std::vector<int64_t> batch_values = to_vector<int64_t>(batch.images);
    values.insert(values.end(), batch_values.begin(), batch_values.end());
  }
  return values;
}

TEST(TokenWindowDataset, SpecSizeAndWindows) {
  const auto dataset = random_windows(1000, TokenWindowOptions(8).seed(3));
  EXPECT_EQ(dataset->image_spec(), (ImageSpec{1, 1, 9, kInt64}));
  EXPECT_EQ(dataset->size(), 1000 / 8);  // tokens / block_size by default
  EXPECT_TRUE(dataset->varies_with_epoch());
  for (int64_t index : {0, 1, 77, 124}) {
    const Example example = dataset->get(index, /*epoch=*/2);
    EXPECT_EQ(example.label, 0);
    EXPECT_EQ(example.image.sizes(), (Shape{1, 1, 9}));
    const std::vector<int64_t> window = to_vector<int64_t>(example.image);
    const int64_t start = dataset->window_start(index, 2);
    for (int64_t t = 0; t < 9; ++t) EXPECT_EQ(window[static_cast<size_t>(t)], start + t);
  }
}

TEST(TokenWindowDataset, StartsAreUniformOverEveryValidPosition) {
  // 20 tokens, block 4: a window needs 5 tokens, so the starts are 0..15 (nanoGPT's
  // torch.randint(len(data) - block_size)); 4000 draws hit each about 250 times.
  const auto dataset = random_windows(20, TokenWindowOptions(4).epoch_size(4000).seed(11));
  ASSERT_EQ(dataset->size(), 4000);
  std::vector<int> hits(16, 0);
  for (int64_t i = 0; i < dataset->size(); ++i) {
    const int64_t start = dataset->window_start(i, 0);
    ASSERT_GE(start, 0);
    ASSERT_LT(start, 16);
    ++hits[static_cast<size_t>(start)];
  }
  for (size_t start = 0; start < hits.size(); ++start) {
    EXPECT_GT(hits[start], 175) << "start " << start;
    EXPECT_LT(hits[start], 325) << "start " << start;
  }
}

TEST(TokenWindowDataset, StartsArePureFunctionsOfSeedEpochAndIndex) {
  const auto a = random_windows(5000, TokenWindowOptions(16).seed(1));
  const auto again = random_windows(5000, TokenWindowOptions(16).seed(1));
  const auto other_seed = random_windows(5000, TokenWindowOptions(16).seed(2));
  int same_across_epochs = 0, same_across_seeds = 0;
  for (int64_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ(a->window_start(i, 0), again->window_start(i, 0));
    same_across_epochs += a->window_start(i, 0) == a->window_start(i, 1);
    same_across_seeds += a->window_start(i, 0) == other_seed->window_start(i, 0);
  }
  // 312 samples over 4984 starts: a few coincidences at most.
  EXPECT_LT(same_across_epochs, 5);
  EXPECT_LT(same_across_seeds, 5);
}

TEST(TokenWindowDataset, LoaderBatchesAreTheSameForZeroOneAndThreeWorkers) {
  const auto dataset = random_windows(3000, TokenWindowOptions(32).seed(42));
  const auto options = DataLoaderOptions(10).shuffle(true).seed(9);
  DataLoader inline_loader(dataset, DataLoaderOptions(options).num_workers(0));
  DataLoader one_worker(dataset, DataLoaderOptions(options).num_workers(1));
  DataLoader three_workers(dataset, DataLoaderOptions(options).num_workers(3).prefetch_depth(2));
  for (int64_t epoch : {0, 1}) {
    SCOPED_TRACE(::testing::Message() << "epoch " << epoch);
    const std::vector<int64_t> expected = pass_windows(inline_loader, epoch);
    ASSERT_EQ(expected.size(), static_cast<size_t>(dataset->size() * 33));
    EXPECT_EQ(pass_windows(one_worker, epoch), expected);
    EXPECT_EQ(pass_windows(three_workers, epoch), expected);
  }
  EXPECT_NE(pass_windows(inline_loader, 0), pass_windows(inline_loader, 1));

  const auto other_seed = random_windows(3000, TokenWindowOptions(32).seed(43));
  DataLoader other_loader(other_seed, DataLoaderOptions(options).num_workers(3));
  EXPECT_NE(pass_windows(other_loader, 0), pass_windows(inline_loader, 0));
}

TEST(TokenWindowDataset, SplitCutsBatchesIntoInputsAndShiftedTargets) {
  const auto dataset = random_windows(500, TokenWindowOptions(6).seed(5));
  DataLoader loader(dataset, DataLoaderOptions(4).num_workers(1));
  int64_t batches = 0;
  for (Batch& batch : loader) {
    const TokenWindowBatch xy = split_token_windows(batch.images);
    const int64_t b = batch.size();
    ASSERT_EQ(xy.inputs.sizes(), (Shape{b, 6}));
    ASSERT_EQ(xy.targets.sizes(), (Shape{b, 6}));
    EXPECT_EQ(xy.inputs.dtype(), kInt64);
    EXPECT_TRUE(xy.inputs.is_contiguous());
    EXPECT_TRUE(xy.targets.is_contiguous());
    const std::vector<int64_t> x = to_vector<int64_t>(xy.inputs);
    const std::vector<int64_t> y = to_vector<int64_t>(xy.targets);
    const std::vector<int64_t> indices = to_vector<int64_t>(batch.indices);
    for (int64_t row = 0; row < b; ++row) {
      const int64_t start = dataset->window_start(indices[static_cast<size_t>(row)], batch.epoch);
      for (int64_t t = 0; t < 6; ++t) {
        EXPECT_EQ(x[static_cast<size_t>(row * 6 + t)], start + t);
        EXPECT_EQ(y[static_cast<size_t>(row * 6 + t)], start + t + 1);
      }
    }
    ++batches;
  }
  EXPECT_EQ(batches, (500 / 6 + 3) / 4);
}

TEST(TokenWindowDataset, DistributedSamplerGivesTwoRanksDisjointSamples) {
  const auto dataset = random_windows(2000, TokenWindowOptions(16).seed(8));  // 125 samples
  for (int64_t epoch : {0, 3}) {
    SCOPED_TRACE(::testing::Message() << "epoch " << epoch);
    std::vector<std::set<int64_t>> seen(2);
    for (int rank : {0, 1}) {
      auto sampler = std::make_shared<DistributedSampler>(
          dataset->size(), DistributedSamplerOptions(rank, 2).shuffle(true).drop_last(true));
      DataLoader loader(dataset, sampler, DataLoaderOptions(8).num_workers(2));
      loader.set_epoch(epoch);
      for (Batch& batch : loader) {
        const std::vector<int64_t> indices = to_vector<int64_t>(batch.indices);
        const std::vector<int64_t> windows = to_vector<int64_t>(batch.images);
        for (size_t row = 0; row < indices.size(); ++row) {
          EXPECT_TRUE(seen[rank].insert(indices[row]).second) << "index " << indices[row];
          // Each rank's window is the one the dataset draws for that index: no rank-dependence.
          EXPECT_EQ(windows[row * 17], dataset->window_start(indices[row], epoch));
        }
      }
      EXPECT_EQ(seen[rank].size(), 62u);
    }
    for (int64_t index : seen[0]) EXPECT_EQ(seen[1].count(index), 0u) << "index " << index;
  }
}

TEST(TokenWindowDataset, ConsecutiveWindowsCoverTheValidationTokensOnce) {
  // 103 tokens, block 10: windows start at 0, 10, ..., 90 (the tenth, at 90, ends at token
  // 100); tokens 101 and 102 are too few for another window.
  const auto dataset = std::make_shared<TokenWindowDataset>(
      counting_tokens(103), TokenWindowOptions(10).placement(WindowPlacement::Consecutive));
  ASSERT_EQ(dataset->size(), 10);
  EXPECT_FALSE(dataset->varies_with_epoch());
  DataLoader loader(dataset, DataLoaderOptions(3).num_workers(2));
  for (int64_t epoch : {0, 5}) {
    loader.set_epoch(epoch);
    std::vector<int64_t> targets;
    for (Batch& batch : loader) {
      const std::vector<int64_t> y = to_vector<int64_t>(split_token_windows(batch.images).targets);
      targets.insert(targets.end(), y.begin(), y.end());
    }
    std::vector<int64_t> expected(100);
    std::iota(expected.begin(), expected.end(), int64_t{1});
    EXPECT_EQ(targets, expected) << "epoch " << epoch;
  }
  // Exactly block_size + 1 tokens make one window.
  TokenWindowDataset single(counting_tokens(11),
                            TokenWindowOptions(10).placement(WindowPlacement::Consecutive));
  EXPECT_EQ(single.size(), 1);
}

TEST(TokenWindowDataset, ConsecutiveWindowsWorkDeviceResident) {
  const auto dataset = std::make_shared<TokenWindowDataset>(
      counting_tokens(64), TokenWindowOptions(7).placement(WindowPlacement::Consecutive));
  DataLoader resident(dataset, DataLoaderOptions(4).device_resident(true));
  DataLoader plain(dataset, DataLoaderOptions(4));
  EXPECT_EQ(pass_windows(resident, 0), pass_windows(plain, 0));
}

TEST(TokenWindowDataset, OptionErrors) {
  EXPECT_ERROR_CONTAINS(TokenWindowDataset(counting_tokens(10), TokenWindowOptions(0)),
                        "TokenWindowDataset: block_size must be at least 1, got 0");
  EXPECT_ERROR_CONTAINS(TokenWindowDataset(counting_tokens(8), TokenWindowOptions(8)),
                        "a window is block_size + 1 = 9 tokens, but the sequence holds only 8");
  EXPECT_ERROR_CONTAINS(
      TokenWindowDataset(counting_tokens(20), TokenWindowOptions(4).epoch_size(-1)),
      "epoch_size must be non-negative (0: tokens / block_size), got -1");
  EXPECT_ERROR_CONTAINS(
      TokenWindowDataset(
          counting_tokens(20),
          TokenWindowOptions(4).placement(WindowPlacement::Consecutive).epoch_size(3)),
      "expected epoch_size 0 with WindowPlacement::Consecutive");
  const TokenWindowDataset dataset(counting_tokens(20), TokenWindowOptions(4));
  EXPECT_ERROR_CONTAINS(dataset.window_start(5, 0),
                        "sample index 5 is out of range, expected [0, 5)");
  EXPECT_ERROR_CONTAINS(dataset.get(-1), "out of range");
}

TEST(TokenWindowDataset, SplitErrors) {
  EXPECT_ERROR_CONTAINS(split_token_windows(Tensor()), "split_token_windows: windows is undefined");
  EXPECT_ERROR_CONTAINS(split_token_windows(zeros({2, 1, 1, 5}, kInt32)),
                        "expected int64 windows [B, 1, 1, T + 1] with T >= 1");
  EXPECT_ERROR_CONTAINS(split_token_windows(zeros({2, 5}, kInt64)), "got int64 [2, 5]");
  EXPECT_ERROR_CONTAINS(split_token_windows(zeros({2, 1, 1, 1}, kInt64)), "[2, 1, 1, 1]");
}

}  // namespace
}  // namespace minidl::data
