#include "minidl/data/samplers/random_sampler.h"

#include "minidl/core/error.h"
#include "minidl/data/samplers/permutation.h"

namespace minidl::data {

RandomSampler::RandomSampler(int64_t size, uint64_t seed) : size_(size), seed_(seed) {
  MINIDL_CHECK(size >= 0, "RandomSampler: size must be non-negative, got ", size);
}

std::vector<int64_t> RandomSampler::indices(int64_t epoch) const {
  return random_permutation(size_, seed_, epoch);
}

}  // namespace minidl::data
