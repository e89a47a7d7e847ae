#include "minidl/data/samplers/permutation.h"

#include <numeric>
#include <utility>

#include "minidl/core/error.h"
#include "minidl/data/sample_random.h"

namespace minidl::data {

std::vector<int64_t> random_permutation(int64_t n, uint64_t seed, int64_t epoch) {
  MINIDL_CHECK(n >= 0, "random_permutation: n must be non-negative, got ", n);
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  for (int64_t i = n - 1; i > 0; --i) {
    const philox::Block words = sample_random_words(
        seed, static_cast<uint64_t>(i), static_cast<uint64_t>(epoch), DrawPurpose::Shuffle);
    const uint64_t j =
        uniform_below_64(philox::join(words.w0, words.w1), static_cast<uint64_t>(i) + 1);
    std::swap(order[static_cast<size_t>(i)], order[j]);
  }
  return order;
}

}  // namespace minidl::data
