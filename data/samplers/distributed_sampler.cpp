#include "minidl/data/samplers/distributed_sampler.h"

#include <numeric>

#include "minidl/core/error.h"
#include "minidl/data/samplers/permutation.h"

namespace minidl::data {

DistributedSampler::DistributedSampler(int64_t dataset_size, DistributedSamplerOptions options)
    : dataset_size_(dataset_size), options_(options) {
  const int64_t world = options.world_size();
  MINIDL_CHECK(dataset_size >= 0, "DistributedSampler: dataset size must be non-negative, got ",
               dataset_size);
  MINIDL_CHECK(world >= 1, "DistributedSampler: world_size must be at least 1, got ", world);
  MINIDL_CHECK(options.rank() >= 0 && options.rank() < world, "DistributedSampler: rank ",
               options.rank(), " is outside [0, ", world, ")");
  // PyTorch: with drop_last and a remainder, ceil((N - world) / world) == floor(N / world).
  samples_per_rank_ =
      options.drop_last() ? dataset_size / world : (dataset_size + world - 1) / world;
}

std::vector<int64_t> DistributedSampler::indices(int64_t epoch) const {
  std::vector<int64_t> order;
  if (options_.shuffle()) {
    order = random_permutation(dataset_size_, options_.seed(), epoch);
  } else {
    order.resize(static_cast<size_t>(dataset_size_));
    std::iota(order.begin(), order.end(), int64_t{0});
  }
  const int64_t world = options_.world_size();
  const int64_t total = samples_per_rank_ * world;
  if (dataset_size_ > 0) {
    // Pad by repeating the order from its start (more than once when it is shorter than the
    // padding, as PyTorch does), or cut it.
    for (int64_t i = dataset_size_; i < total; ++i) {
      const int64_t repeated = order[static_cast<size_t>(i % dataset_size_)];
      order.push_back(repeated);
    }
  }
  order.resize(static_cast<size_t>(total));
  std::vector<int64_t> shard;
  shard.reserve(static_cast<size_t>(samples_per_rank_));
  for (int64_t position = options_.rank(); position < total; position += world)
    shard.push_back(order[static_cast<size_t>(position)]);
  return shard;
}

}  // namespace minidl::data
