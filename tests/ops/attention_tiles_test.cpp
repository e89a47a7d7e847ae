// The vectorised element loops of a CPU attention tile (ops/cpu/attention_tiles.h) against their
// definitions computed in double: the online softmax's step (a row's earlier state rescaled, the
// causal mask as each row's count of visible keys, rows that see no key) and the backward's
// probabilities and score gradients (a row that saw no key at all included); and the AVX2 and
// AVX-512 versions giving the baseline's bits.
#include "minidl/ops/cpu/attention_tiles.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "minidl/ops/cpu/vector_versions.h"

namespace minidl {
namespace {

using attention::OnlineSoftmax;
using cpu::AttentionScoreTile;
using cpu::LoopVersion;

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// 7 rows of queries 40..46 against 37 keys 32..68 (a ragged width, not a multiple of the 16
// lanes), stored with a wider stride. Under is_causal, query 40 sees keys 32..40 (9 columns),
// query 46 sees 15; with first_key 50 instead, queries 40..46 see none.
struct TileCase {
  int64_t first_key;
  bool is_causal;
};
constexpr int64_t kRows = 7, kColumns = 37, kStride = 48, kFirstQuery = 40;
constexpr float kScale = 0.35f;

std::vector<float> random_values(size_t n, float low, float high, unsigned seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> uniform(low, high);
  std::vector<float> values(n);
  for (float& v : values) v = uniform(generator);
  return values;
}

int64_t visible(const TileCase& c, int64_t r) {
  if (!c.is_causal) return kColumns;
  return std::clamp<int64_t>(kFirstQuery + r + 1 - c.first_key, 0, kColumns);
}

AttentionScoreTile tile_of(std::vector<float>& scores, const TileCase& c) {
  return {.scores = scores.data(),
          .stride = kStride,
          .rows = kRows,
          .columns = kColumns,
          .first_query = kFirstQuery,
          .first_key = c.first_key,
          .is_causal = c.is_causal,
          .scale = kScale};
}

const TileCase kCases[] = {{32, true}, {50, true}, {32, false}};

// Each row comes in with an earlier block's state: rows 0..2 with a max above this block's
// scores (factor below 1 only from the other rows), row 3 with nothing seen yet.
std::vector<OnlineSoftmax<float>> earlier_rows() {
  std::vector<OnlineSoftmax<float>> rows(kRows);
  for (int64_t r = 0; r < kRows; ++r) {
    if (r == 3) continue;
    rows[static_cast<size_t>(r)].max = r < 3 ? 4.0f : -1.5f;
    rows[static_cast<size_t>(r)].sum = 2.5f + static_cast<float>(r);
  }
  return rows;
}

TEST(AttentionTiles, OnlineSoftmaxTileFollowsItsDefinition) {
  constexpr int64_t kWidth = 5;
  for (const TileCase& c : kCases) {
    SCOPED_TRACE("first_key " + std::to_string(c.first_key) + (c.is_causal ? " causal" : ""));
    std::vector<float> scores = random_values(kRows * kStride, -6.0f, 6.0f, 1);
    const std::vector<float> raw = scores;
    std::vector<float> accumulators = random_values(kRows * kWidth, -1.0f, 1.0f, 2);
    const std::vector<float> raw_accumulators = accumulators;
    std::vector<OnlineSoftmax<float>> rows = earlier_rows();
    const std::vector<OnlineSoftmax<float>> before = rows;
    cpu::online_softmax_tile(tile_of(scores, c), rows.data(), accumulators.data(), kWidth);
    for (int64_t r = 0; r < kRows; ++r) {
      SCOPED_TRACE("row " + std::to_string(r));
      const OnlineSoftmax<float>& old = before[static_cast<size_t>(r)];
      double block_max = -kInfinity;
      for (int64_t j = 0; j < visible(c, r); ++j)
        block_max = std::max(block_max, double(raw[r * kStride + j] * kScale));
      const double new_max = std::max(block_max, double(old.max));
      const double factor = new_max == -kInfinity ? 1.0 : std::exp(double(old.max) - new_max);
      double sum = double(old.sum) * factor;
      for (int64_t j = 0; j < kColumns; ++j) {
        // exp's argument formed in float, as the loops form it; exp itself in double.
        const double weight =
            j < visible(c, r)
                ? std::exp(double(raw[r * kStride + j] * kScale - static_cast<float>(new_max)))
                : 0.0;
        sum += weight;
        EXPECT_NEAR(scores[r * kStride + j], weight, 3e-7 * weight + 1e-30) << "column " << j;
      }
      for (int64_t j = kColumns; j < kStride; ++j)  // beyond the tile: untouched
        EXPECT_EQ(scores[r * kStride + j], raw[r * kStride + j]);
      EXPECT_EQ(rows[static_cast<size_t>(r)].max, static_cast<float>(new_max));
      EXPECT_NEAR(rows[static_cast<size_t>(r)].sum, sum, 1e-6 * sum);
      for (int64_t e = 0; e < kWidth; ++e)
        EXPECT_NEAR(accumulators[r * kWidth + e], raw_accumulators[r * kWidth + e] * factor, 1e-6);
    }
  }
}

TEST(AttentionTiles, ScoreGradientTileFollowsItsDefinition) {
  for (const TileCase& c : kCases) {
    SCOPED_TRACE("first_key " + std::to_string(c.first_key) + (c.is_causal ? " causal" : ""));
    std::vector<float> scores = random_values(kRows * kStride, -6.0f, 6.0f, 3);
    std::vector<float> gradients = random_values(kRows * kStride, -2.0f, 2.0f, 4);
    const std::vector<float> raw = scores, raw_gradients = gradients;
    std::vector<float> logsumexp = random_values(kRows, 2.0f, 4.0f, 5);
    logsumexp[5] = std::numeric_limits<float>::infinity();  // a row that saw no key
    const std::vector<float> delta = random_values(kRows, -0.5f, 0.5f, 6);
    cpu::score_gradient_tile(tile_of(scores, c), gradients.data(), logsumexp.data(), delta.data());
    for (int64_t r = 0; r < kRows; ++r) {
      SCOPED_TRACE("row " + std::to_string(r));
      for (int64_t j = 0; j < kColumns; ++j) {
        const int64_t at = r * kStride + j;
        const bool seen = j < visible(c, r) && r != 5;
        const double probability = seen ? std::exp(double(raw[at] * kScale - logsumexp[r])) : 0.0;
        const double gradient = probability * (double(raw_gradients[at]) - delta[r]) * kScale;
        EXPECT_NEAR(scores[at], probability, 3e-7 * probability + 1e-30) << "column " << j;
        EXPECT_NEAR(gradients[at], gradient, 1e-6 * std::abs(gradient) + 1e-12) << "column " << j;
      }
    }
  }
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(AttentionTiles, EveryLoopVersionGivesTheBaselinesBits) {
  const std::vector<LoopVersion> versions = cpu::loop_versions_of_this_cpu();
  if (versions.size() == 1) GTEST_SKIP() << "this CPU has no AVX2: only the baseline loops run";
  constexpr int64_t kWidth = 3;
  for (const TileCase& c : kCases) {
    SCOPED_TRACE("first_key " + std::to_string(c.first_key) + (c.is_causal ? " causal" : ""));
    const size_t count = versions.size();
    std::vector<std::vector<float>> results(count), sums(count), accumulators(count),
        gradients(count);
    for (size_t version = 0; version < count; ++version) {
      const LoopVersion loops = versions[version];
      std::vector<float> scores = random_values(kRows * kStride, -30.0f, 30.0f, 7);
      accumulators[version] = random_values(kRows * kWidth, -1.0f, 1.0f, 8);
      std::vector<OnlineSoftmax<float>> rows = earlier_rows();
      cpu::online_softmax_tile(tile_of(scores, c), rows.data(), accumulators[version].data(),
                               kWidth, loops);
      results[version] = scores;
      for (const auto& row : rows) sums[version].push_back(row.sum);

      std::vector<float> probabilities = random_values(kRows * kStride, -30.0f, 30.0f, 9);
      gradients[version] = random_values(kRows * kStride, -2.0f, 2.0f, 10);
      const std::vector<float> logsumexp = random_values(kRows, 0.0f, 30.0f, 11);
      const std::vector<float> delta = random_values(kRows, -0.5f, 0.5f, 12);
      cpu::score_gradient_tile(tile_of(probabilities, c), gradients[version].data(),
                               logsumexp.data(), delta.data(), loops);
      results[version].insert(results[version].end(), probabilities.begin(), probabilities.end());
    }
    for (size_t version = 1; version < count; ++version) {
      SCOPED_TRACE("version " + std::to_string(version) + " against the baseline");
      EXPECT_TRUE(same_bits(results[0], results[version]));
      EXPECT_TRUE(same_bits(sums[0], sums[version]));
      EXPECT_TRUE(same_bits(accumulators[0], accumulators[version]));
      EXPECT_TRUE(same_bits(gradients[0], gradients[version]));
    }
  }
}

}  // namespace
}  // namespace minidl
