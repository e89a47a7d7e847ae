// The vectorisable element loops of a CPU attention tile (ops/cpu/attention_tiles.h).
#include "minidl/ops/cpu/attention_tiles.h"

#include <algorithm>

#include "minidl/ops/cpu/row_lanes.h"
#include "minidl/ops/cpu/vector_versions.h"
#include "minidl/ops/cpu/vectorisable_math.h"

namespace minidl::cpu {

namespace {

// How many of the tile's columns row r sees: all of them, or under is_causal the keys up to its
// query (the lower triangle aligned top-left, attention::causally_visible).
inline int64_t visible_columns(const AttentionScoreTile& tile, int64_t r) {
  if (!tile.is_causal) return tile.columns;
  return std::clamp<int64_t>(tile.first_query + r + 1 - tile.first_key, 0, tile.columns);
}

inline void online_softmax_rows(const AttentionScoreTile& tile,
                                attention::OnlineSoftmax<float>* rows, float* accumulators,
                                int64_t accumulator_width) {
  for (int64_t r = 0; r < tile.rows; ++r) {
    float* scores = tile.scores + r * tile.stride;
    const int64_t visible = visible_columns(tile, r);
    for (int64_t c = 0; c < visible; ++c) scores[c] *= tile.scale;
    attention::OnlineSoftmax<float>& row = rows[r];
    const float factor = row.raise_max(max_of(scores, visible));
    if (factor != 1.0f) {
      float* accumulator = accumulators + r * accumulator_width;
      for (int64_t e = 0; e < accumulator_width; ++e) accumulator[e] *= factor;
    }
    const float max = row.max;
    for (int64_t c = 0; c < visible; ++c) scores[c] = vectorisable_exp(scores[c] - max);
    row.sum += sum_of(scores, visible);
    std::fill(scores + visible, scores + tile.columns, 0.0f);
  }
}

inline void score_gradient_rows(const AttentionScoreTile& tile, float* grad_probabilities,
                                const float* logsumexp, const float* delta) {
  for (int64_t r = 0; r < tile.rows; ++r) {
    float* scores = tile.scores + r * tile.stride;
    float* gradients = grad_probabilities + r * tile.stride;
    // A row that saw no key at all kept logsumexp = +inf: its probabilities are all 0.
    const int64_t visible =
        logsumexp[r] == attention::infinity<float>() ? 0 : visible_columns(tile, r);
    const float row_logsumexp = logsumexp[r], row_delta = delta[r];
    for (int64_t c = 0; c < visible; ++c) {
      const float probability = vectorisable_exp(scores[c] * tile.scale - row_logsumexp);
      scores[c] = probability;
      gradients[c] =
          probability == 0.0f
              ? 0.0f
              : attention::score_gradient(probability, gradients[c], row_delta) * tile.scale;
    }
    std::fill(scores + visible, scores + tile.columns, 0.0f);
    std::fill(gradients + visible, gradients + tile.columns, 0.0f);
  }
}

MINIDL_AVX512 void online_softmax_rows_avx512(const AttentionScoreTile& tile,
                                              attention::OnlineSoftmax<float>* rows,
                                              float* accumulators, int64_t accumulator_width) {
  online_softmax_rows(tile, rows, accumulators, accumulator_width);
}

MINIDL_AVX512 void score_gradient_rows_avx512(const AttentionScoreTile& tile,
                                              float* grad_probabilities, const float* logsumexp,
                                              const float* delta) {
  score_gradient_rows(tile, grad_probabilities, logsumexp, delta);
}

MINIDL_AVX2 void online_softmax_rows_avx2(const AttentionScoreTile& tile,
                                          attention::OnlineSoftmax<float>* rows,
                                          float* accumulators, int64_t accumulator_width) {
  online_softmax_rows(tile, rows, accumulators, accumulator_width);
}

MINIDL_AVX2 void score_gradient_rows_avx2(const AttentionScoreTile& tile, float* grad_probabilities,
                                          const float* logsumexp, const float* delta) {
  score_gradient_rows(tile, grad_probabilities, logsumexp, delta);
}

}  // namespace

void online_softmax_tile(const AttentionScoreTile& tile, attention::OnlineSoftmax<float>* rows,
                         float* accumulators, int64_t accumulator_width, LoopVersion loops) {
  if (runs_avx512(loops))
    online_softmax_rows_avx512(tile, rows, accumulators, accumulator_width);
  else if (runs_avx2(loops))
    online_softmax_rows_avx2(tile, rows, accumulators, accumulator_width);
  else
    online_softmax_rows(tile, rows, accumulators, accumulator_width);
}

void score_gradient_tile(const AttentionScoreTile& tile, float* grad_probabilities,
                         const float* logsumexp, const float* delta, LoopVersion loops) {
  if (runs_avx512(loops))
    score_gradient_rows_avx512(tile, grad_probabilities, logsumexp, delta);
  else if (runs_avx2(loops))
    score_gradient_rows_avx2(tile, grad_probabilities, logsumexp, delta);
  else
    score_gradient_rows(tile, grad_probabilities, logsumexp, delta);
}

}  // namespace minidl::cpu
