#pragma once
// The per-element math of scaled dot-product attention, written once for the CPU kernels
// (ops/cpu/attention.cpp) and the CUDA kernels (ops/cuda/attention.cu): masking, the online
// softmax, the logsumexp, the dropout mask and the gradient of a score.
//
// Note [Blocked attention]
//   Forward (FlashAttention, Dao et al. 2022): a row i of queries walks the keys block by block
//   keeping a running max m and sum l of exp(score - m) and an accumulator of Dv values; a new
//   block with larger max rescales l and the accumulator by exp(m_old - m_new). At the end
//   out_i = acc / l and logsumexp_i = m + log(l), which is all backward keeps besides out:
//   O(T) floats per head instead of the [T, S] probabilities.
//   Backward (FlashAttention-2): P_ij = exp(score_ij - logsumexp_i) is recomputed block by
//   block, and with dP_ij = dO_i . V_j (times the dropout mask / (1 - p)) and
//   Delta_i = rowsum(dO_i * O_i), dScore_ij = P_ij * (dP_ij - Delta_i); then
//   dV_j = sum_i Pdrop_ij dO_i, dK_j = scale * sum_i dScore_ij Q_i and
//   dQ_i = scale * sum_j dScore_ij K_j. Delta_i equals sum_j P_ij dP_ij also with dropout,
//   since O_i = sum_j Pdrop_ij V_j.
//
// Note [Attention dropout]
//   Entry (b, h, i, j) of the attention probabilities is kept when the Philox uniform of
//   counter start.offset + ((b * H + h) * T + i) * S + j is >= p (dropout::keeps, Note
//   [Dropout masks are recomputed, not stored]); the op reserves B * H * T * S counters. So the
//   mask is a pure function of (seed, offset, b, h, i, j): backward regenerates it, and the CPU
//   and CUDA kernels, whatever their tiling, drop the same entries.
#include <cstdint>
#include <limits>

#include "minidl/core/macros.h"
#include "minidl/ops/dropout_math.h"

namespace minidl::attention {

// libm's exp and log in Acc (float or double), the same spelling on host and device.
template <class Acc>
MINIDL_HOST_DEVICE Acc exp_of(Acc x) {
  if constexpr (sizeof(Acc) == sizeof(float))
    return ::expf(x);
  else
    return ::exp(x);
}
template <class Acc>
MINIDL_HOST_DEVICE Acc log_of(Acc x) {
  if constexpr (sizeof(Acc) == sizeof(float))
    return ::logf(x);
  else
    return ::log(x);
}

template <class Acc>
MINIDL_HOST_DEVICE Acc infinity() {
  return std::numeric_limits<Acc>::infinity();
}

// Whether key j is visible to query i under is_causal: the lower triangle aligned top-left.
MINIDL_HOST_DEVICE bool causally_visible(int64_t query, int64_t key) { return key <= query; }

// The Philox counter of entry (bh = b * H + h, i, j); see Note [Attention dropout].
MINIDL_HOST_DEVICE uint64_t dropout_counter(uint64_t offset, int64_t bh, int64_t query, int64_t key,
                                            int64_t query_length, int64_t key_length) {
  return offset + static_cast<uint64_t>((bh * query_length + query) * key_length + key);
}

// 1 / (1 - p), the kept entries' scale; 0 for p = 1, where nothing is kept (and 1 / 0 would be
// a division by zero).
MINIDL_HOST_DEVICE double dropout_keep_scale(double p) { return p < 1.0 ? 1.0 / (1.0 - p) : 0.0; }

// The factor entry (bh, i, j) is multiplied by after dropout: 1 / (1 - p) when kept, else 0;
// 1 without dropout (p == 0).
template <class Acc>
MINIDL_HOST_DEVICE Acc dropout_factor(uint64_t seed, uint64_t counter, double p, Acc keep_scale) {
  if (p == 0.0) return Acc(1);
  return dropout::keeps(seed, counter, p) ? keep_scale : Acc(0);
}

// A scaled score with an additive mask value, or -inf where masked out (masked_out from a
// boolean mask or causality).
template <class Acc>
MINIDL_HOST_DEVICE Acc masked_score(Acc scaled_dot, Acc additive, bool masked_out) {
  return masked_out ? -infinity<Acc>() : scaled_dot + additive;
}

// The online softmax of one row: running max and sum of exp(score - max).
template <class Acc>
struct OnlineSoftmax {
  Acc max = -infinity<Acc>();
  Acc sum = Acc(0);

  // Takes in a block whose largest score is block_max; returns the factor the earlier sum and
  // accumulator must be multiplied by (0 when nothing was seen yet).
  MINIDL_HOST_DEVICE Acc raise_max(Acc block_max) {
    const Acc new_max = block_max > max ? block_max : max;
    const Acc factor = new_max == -infinity<Acc>() ? Acc(1) : exp_of(max - new_max);
    max = new_max;
    sum *= factor;
    return factor;
  }
  // exp(score - max) for a score of the current block (0 for a masked one).
  MINIDL_HOST_DEVICE Acc weight(Acc score) const {
    return score == -infinity<Acc>() ? Acc(0) : exp_of(score - max);
  }
  // logsumexp of the row, +inf when every key was masked (its probabilities are then 0).
  MINIDL_HOST_DEVICE Acc logsumexp() const {
    return sum == Acc(0) ? infinity<Acc>() : max + log_of(sum);
  }
  // 1 / sum, the output's normalisation; 0 for a fully masked row, whose output is 0 as
  // PyTorch 2.15's CPU kernel gives.
  MINIDL_HOST_DEVICE Acc inverse_sum() const { return sum == Acc(0) ? Acc(0) : Acc(1) / sum; }
};

// P_ij recomputed from the saved logsumexp: 0 for a masked score or a fully masked row.
template <class Acc>
MINIDL_HOST_DEVICE Acc probability(Acc score, Acc logsumexp) {
  return score == -infinity<Acc>() || logsumexp == infinity<Acc>() ? Acc(0)
                                                                   : exp_of(score - logsumexp);
}

// dScore_ij = P_ij * (dP_ij - Delta_i), dP_ij already multiplied by the dropout factor.
template <class Acc>
MINIDL_HOST_DEVICE Acc score_gradient(Acc probability, Acc grad_probability, Acc delta) {
  return probability * (grad_probability - delta);
}

}  // namespace minidl::attention
