#pragma once
// A random permutation of [0, n) that depends only on (seed, epoch): a Fisher-Yates shuffle
// whose i-th swap draws from Philox at (seed, index i, epoch, DrawPurpose::Shuffle) (Note
// [Randomness of samples] in data/sample_random.h).
#include <cstdint>
#include <vector>

namespace minidl::data {

std::vector<int64_t> random_permutation(int64_t n, uint64_t seed, int64_t epoch);

}  // namespace minidl::data
