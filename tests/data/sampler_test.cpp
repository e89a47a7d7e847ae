// Samplers: sequential order, reshuffling per epoch from the seed, and DistributedSampler with
// PyTorch's semantics.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <vector>

#include "minidl/data/samplers/distributed_sampler.h"
#include "minidl/data/samplers/random_sampler.h"
#include "minidl/data/samplers/sequential_sampler.h"
#include "test_util.h"

namespace minidl::data {
namespace {

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> values(static_cast<size_t>(n));
  std::iota(values.begin(), values.end(), int64_t{0});
  return values;
}

std::vector<int64_t> sorted(std::vector<int64_t> values) {
  std::sort(values.begin(), values.end());
  return values;
}

TEST(SequentialSampler, GivesEveryIndexInOrderEveryEpoch) {
  const SequentialSampler sampler(7);
  EXPECT_EQ(sampler.size(), 7);
  EXPECT_EQ(sampler.indices(0), iota(7));
  EXPECT_EQ(sampler.indices(5), iota(7));
  EXPECT_TRUE(SequentialSampler(0).indices(0).empty());
}

TEST(RandomSampler, EachEpochIsAPermutationReshuffledFromSeedAndEpoch) {
  const RandomSampler sampler(1000, 7);
  const std::vector<int64_t> epoch0 = sampler.indices(0);
  EXPECT_EQ(sorted(epoch0), iota(1000));
  EXPECT_NE(epoch0, iota(1000));
  EXPECT_EQ(epoch0, RandomSampler(1000, 7).indices(0));  // reproducible
  EXPECT_NE(epoch0, sampler.indices(1));                 // reshuffled per epoch
  EXPECT_EQ(sorted(sampler.indices(1)), iota(1000));
  EXPECT_NE(epoch0, RandomSampler(1000, 8).indices(0));  // seeded
}

TEST(RandomSampler, EveryIndexIsEquallyLikelyInEveryPosition) {
  // Over 4000 epochs of 4 indices, each (index, position) pair has probability 1/4: 1000
  // expected, standard deviation about 27; allow five of them.
  const RandomSampler sampler(4, 3);
  std::map<std::pair<int64_t, size_t>, int> counts;
  for (int64_t epoch = 0; epoch < 4000; ++epoch) {
    const std::vector<int64_t> order = sampler.indices(epoch);
    for (size_t position = 0; position < order.size(); ++position)
      ++counts[{order[position], position}];
  }
  ASSERT_EQ(counts.size(), 16u);
  for (const auto& [key, count] : counts)
    EXPECT_NEAR(count, 1000, 5 * 27) << "index " << key.first << " at position " << key.second;
}

std::vector<std::vector<int64_t>> shards(int64_t size, int world, bool shuffle, bool drop_last,
                                         int64_t epoch) {
  std::vector<std::vector<int64_t>> result;
  for (int rank = 0; rank < world; ++rank)
    result.push_back(
        DistributedSampler(
            size,
            DistributedSamplerOptions(rank, world).shuffle(shuffle).drop_last(drop_last).seed(11))
            .indices(epoch));
  return result;
}

TEST(DistributedSampler, MatchesPyTorchOnAnUnshuffledExample) {
  // torch.utils.data.DistributedSampler(range(10), num_replicas=3, rank=r, shuffle=False)
  EXPECT_EQ(shards(10, 3, false, false, 0),
            (std::vector<std::vector<int64_t>>{{0, 3, 6, 9}, {1, 4, 7, 0}, {2, 5, 8, 1}}));
  // ... and with drop_last=True.
  EXPECT_EQ(shards(10, 3, false, true, 0),
            (std::vector<std::vector<int64_t>>{{0, 3, 6}, {1, 4, 7}, {2, 5, 8}}));
  // Fewer samples than ranks: the order is repeated to pad.
  EXPECT_EQ(shards(2, 5, false, false, 0),
            (std::vector<std::vector<int64_t>>{{0}, {1}, {0}, {1}, {0}}));
  EXPECT_EQ(shards(2, 5, false, true, 0), (std::vector<std::vector<int64_t>>(5)));
}

TEST(DistributedSampler, ShardsAreEqualDisjointAndCoverTheData) {
  for (int64_t size : {1, 9, 10, 12, 101})
    for (int world : {1, 2, 3, 4, 7})
      for (bool drop_last : {false, true})
        for (int64_t epoch : {0, 1}) {
          SCOPED_TRACE(::testing::Message() << "size " << size << ", world " << world
                                            << ", drop_last " << drop_last << ", epoch " << epoch);
          const auto parts = shards(size, world, /*shuffle=*/true, drop_last, epoch);
          const int64_t per_rank = drop_last ? size / world : (size + world - 1) / world;
          std::vector<int64_t> all;
          for (const auto& part : parts) {
            EXPECT_EQ(static_cast<int64_t>(part.size()), per_rank);
            all.insert(all.end(), part.begin(), part.end());
          }
          std::vector<int64_t> distinct = sorted(all);
          distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
          if (drop_last) {
            // Disjoint: no index twice. Only the remainder of size / world is left out.
            EXPECT_EQ(distinct.size(), all.size());
            EXPECT_EQ(static_cast<int64_t>(all.size()), size - size % world);
          } else {
            // Covering: every index; repeats only as padding, and only as much as needed.
            EXPECT_EQ(distinct, iota(size));
            EXPECT_EQ(static_cast<int64_t>(all.size() - distinct.size()), per_rank * world - size);
          }
        }
}

TEST(DistributedSampler, ShufflesPerEpochTheSameWayOnEveryRank) {
  const auto epoch0 = shards(100, 4, true, false, 0);
  const auto epoch1 = shards(100, 4, true, false, 1);
  EXPECT_NE(epoch0, epoch1);
  EXPECT_EQ(epoch0, shards(100, 4, true, false, 0));
  EXPECT_NE(epoch0[0], (std::vector<int64_t>{0,  4,  8,  12, 16, 20, 24, 28, 32, 36, 40, 44, 48,
                                             52, 56, 60, 64, 68, 72, 76, 80, 84, 88, 92, 96}));
}

TEST(DistributedSampler, RejectsBadRanksAndWorlds) {
  EXPECT_ERROR_CONTAINS(DistributedSampler(10, DistributedSamplerOptions(3, 3)),
                        "DistributedSampler: rank 3 is outside [0, 3)");
  EXPECT_ERROR_CONTAINS(DistributedSampler(10, DistributedSamplerOptions(0, 0)),
                        "world_size must be at least 1, got 0");
}

}  // namespace
}  // namespace minidl::data
