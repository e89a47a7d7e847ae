#pragma once
// This rank's share of the dataset under data parallelism, with the semantics of PyTorch's
// torch.utils.data.DistributedSampler:
//   - every rank computes the same epoch order: a permutation from (seed, epoch) when
//     shuffling, else 0..N-1;
//   - without drop_last the order is padded, by repeating its start, to a multiple of
//     world_size, so every rank gets ceil(N / world_size) indices; with drop_last it is cut to
//     floor(N / world_size) * world_size;
//   - rank r takes positions r, r + world_size, r + 2 * world_size, ...
// So the shards of one epoch are disjoint (apart from the padding) and together cover the data.
#include <cstdint>

#include "minidl/core/arg.h"
#include "minidl/data/samplers/sampler.h"

namespace minidl::data {

struct DistributedSamplerOptions {
  DistributedSamplerOptions(int rank, int world_size) : rank_(rank), world_size_(world_size) {}

  // Set by the constructor only.
  int rank() const { return rank_; }
  int world_size() const { return world_size_; }

  MINIDL_ARG(bool, shuffle) = true;     // PyTorch's default
  MINIDL_ARG(bool, drop_last) = false;  // PyTorch's default
  MINIDL_ARG(uint64_t, seed) = 0;       // must be the same on every rank

 private:
  int rank_;
  int world_size_;
};

class DistributedSampler final : public Sampler {
 public:
  DistributedSampler(int64_t dataset_size, DistributedSamplerOptions options);
  std::vector<int64_t> indices(int64_t epoch) const override;
  // Indices per rank and epoch (PyTorch's num_samples).
  int64_t size() const override { return samples_per_rank_; }
  const DistributedSamplerOptions& options() const { return options_; }

 private:
  int64_t dataset_size_;
  DistributedSamplerOptions options_;
  int64_t samples_per_rank_;
};

}  // namespace minidl::data
