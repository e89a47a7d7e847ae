#pragma once
// Every index once per epoch, in an order reshuffled each epoch from (seed, epoch).
#include <cstdint>

#include "minidl/data/samplers/sampler.h"

namespace minidl::data {

class RandomSampler final : public Sampler {
 public:
  explicit RandomSampler(int64_t size, uint64_t seed = 0);
  std::vector<int64_t> indices(int64_t epoch) const override;
  int64_t size() const override { return size_; }
  uint64_t seed() const { return seed_; }

 private:
  int64_t size_;
  uint64_t seed_;
};

}  // namespace minidl::data
