#pragma once
// The element-wise work of one tile of the CPU attention (ops/cpu/attention.cpp) in float, for
// problems without an attn_mask tensor or dropout (a GPT's causal self-attention): between the
// tile's GEMMs, the scores' scale and causal mask, the online softmax's exponentials and row
// sums (forward), and the recomputed probabilities and score gradients (backward).
//
// These loops took more of the attention's time than its GEMMs (perf, the default GPT's shape
// [32, 4, 128, 32]: 36% in the per-element loops and glibc's scalar expf against 25% in OpenBLAS),
// so they are written for the vectoriser: ops/cpu/vectorisable_math.h's exp, no per-element
// branches (the causal mask is a row's count of visible keys), row maxima and sums in 16 explicit
// lanes. Each is compiled for baseline x86-64, AVX2 and AVX-512, and chosen at run time, with the
// same bits (Note [Loops compiled for AVX-512 and AVX2] in ops/cpu/vector_versions.h).
// A tile's result does not depend on the thread running it, so neither does the attention's.
#include <cstdint>

#include "minidl/ops/attention_math.h"
#include "minidl/ops/cpu/row_lanes.h"

namespace minidl::cpu {

// A tile of scores: rows first_query.. of the queries against columns first_key.. of the keys,
// row r at scores + r * stride; the raw products q . k, unscaled, as the GEMM left them.
struct AttentionScoreTile {
  float* scores;
  int64_t stride;
  int64_t rows, columns;
  int64_t first_query, first_key;
  bool is_causal;
  float scale;
};

// Forward: scales each row's scores and takes the row's maximum into its online softmax (which
// rescales the row's sum, and the row of `accumulators` [rows, accumulator_width], by the
// factor), then replaces the scores by exp(score - max), 0 where causally masked, and adds them
// to the row's sum.
void online_softmax_tile(const AttentionScoreTile& tile, attention::OnlineSoftmax<float>* rows,
                         float* accumulators, int64_t accumulator_width,
                         LoopVersion loops = LoopVersion::Best);

// Backward: replaces the scores by the probabilities P = exp(score - logsumexp) (0 where
// masked) and grad_probabilities (dO V^T, laid out as the scores) by the scores' gradients times
// the scale, P (dP - delta) scale; logsumexp and delta hold one value per row.
void score_gradient_tile(const AttentionScoreTile& tile, float* grad_probabilities,
                         const float* logsumexp, const float* delta,
                         LoopVersion loops = LoopVersion::Best);

}  // namespace minidl::cpu
