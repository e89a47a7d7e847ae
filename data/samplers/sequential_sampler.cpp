#include "minidl/data/samplers/sequential_sampler.h"

#include <numeric>

#include "minidl/core/error.h"

namespace minidl::data {

SequentialSampler::SequentialSampler(int64_t size) : size_(size) {
  MINIDL_CHECK(size >= 0, "SequentialSampler: size must be non-negative, got ", size);
}

std::vector<int64_t> SequentialSampler::indices(int64_t /*epoch*/) const {
  std::vector<int64_t> order(static_cast<size_t>(size_));
  std::iota(order.begin(), order.end(), int64_t{0});
  return order;
}

}  // namespace minidl::data
