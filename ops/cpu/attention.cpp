// CPU scaled dot-product attention, blocked (Note [Blocked attention] in ops/attention_math.h).
//
// Forward: parallel_for over (b, h, block of kForwardQueryBlock queries); each task walks the
// keys in blocks of kForwardKeyBlock with an online softmax, holding one block of scores and the
// blocks' operands converted to Acc (float, or double for float64).
// Backward: Delta = rowsum(dO * O) first, then one task per (b, h) walks the key blocks in
// order and, within each, the query blocks in order, recomputing each tile's scores once for
// dK and dV (summed over the query blocks in order) and dQ (over the key blocks in order, into
// the head's [T, D] accumulator: D per query, never T x T). Every element is summed by one task
// in a fixed order, so the result has the same bits at any thread count. The price: a call with
// fewer heads than threads leaves threads idle (the GPT's batch x heads is 128). The two-pass form
// before it, parallel over blocks too, recomputed every score twice and took 1.3-1.4x as long in
// the GPT's step (measured against its GEMMs' time in one profile, 2026-11-26).
//
// The tile products (Q K^T, P V, dO V^T, and the gradients' sums) are cblas_?gemm calls on the
// tiles converted to Acc (ops/cpu/gemm.h, OpenBLAS on the calling thread), which leaves the
// masking, the online softmax and the dropout as element loops between them. Measured
// 2026-11-26 on the 2-core development machine (one thread, a 16 x 64 tile, the forward's two
// products, a standalone loop over the same tile 200000 times): for
// D = 16, 32 and 64, plain vectorised dot-product loops ran at 8.0, 10.7 and 13.3 GFLOP/s and
// sgemm at 31.5, 37.5 and 40.0 GFLOP/s. The tiles are the same at any thread count, and so is
// each call's summation order: the results do not depend on the threads.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "minidl/core/ceil_div.h"
#include "minidl/core/parallel.h"
#include "minidl/ops/attention_kernels.h"
#include "minidl/ops/attention_math.h"
#include "minidl/ops/cpu/attention_tiles.h"
#include "minidl/ops/cpu/blas_threads.h"
#include "minidl/ops/cpu/gemm.h"

namespace minidl::cpu {

namespace {

// Tile sizes, chosen by the time of the default GPT's attention ([32, 4, 128, 32], causal, one
// thread, 2026-11-27): forward and backward ms against 16 x 64 tiles in both, 4.8 and 8.5:
// forward 32 x 128 4.1 (64 x 128 4.3, 32 x 64 and 64 x 64 4.7); backward 64 x 64 7.4 (32 x 64 8.1,
// 32 x 128 9.0, 64 x 128 8.8). Larger tiles make fewer, better-shaped GEMM calls; the causal
// mask wastes more of a larger key block.
constexpr int64_t kForwardQueryBlock = 32;
constexpr int64_t kForwardKeyBlock = 128;
constexpr int64_t kBackwardQueryBlock = 64;
constexpr int64_t kBackwardKeyBlock = 64;

// float for float32 and the 16-bit types, double for float64.
template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// A leading dimension BLAS accepts (at least 1, also for an empty row).
int64_t leading(int64_t width) { return std::max<int64_t>(width, 1); }

// Up to `capacity` consecutive rows of `width` elements, converted to Acc.
template <class Acc>
struct AccRows {
  AccRows(int64_t capacity, int64_t width)
      : width(width), values(static_cast<size_t>(capacity * width)) {}
  template <class T>
  void load(const T* rows, int64_t first, int64_t row_count) {
    const T* source = rows + first * width;
    for (int64_t e = 0; e < row_count * width; ++e)
      values[static_cast<size_t>(e)] = static_cast<Acc>(source[e]);
  }
  const Acc* row(int64_t r) const { return values.data() + r * width; }
  Acc* row(int64_t r) { return values.data() + r * width; }
  void zero() { std::fill(values.begin(), values.end(), Acc(0)); }

  int64_t width;
  std::vector<Acc> values;
};

// One call's operands and how a score is formed and dropped.
template <class T, class Acc>
struct Problem {
  Problem(const AttentionParams& params, const Tensor& query, const Tensor& key,
          const Tensor& value, const Tensor& mask)
      : params(params),
        query(query.data_ptr<T>()),
        key(key.data_ptr<T>()),
        value(value.data_ptr<T>()),
        scale(static_cast<Acc>(params.scale)),
        keep_scale(static_cast<Acc>(attention::dropout_keep_scale(params.dropout_p))) {
    if (params.mask == AttentionMask::Boolean) boolean_mask = mask.data_ptr<bool>();
    if (params.mask == AttentionMask::Additive) additive_mask = mask.data_ptr<T>();
  }

  int64_t heads_total() const { return params.batch * params.heads; }
  const T* query_rows(int64_t bh) const {
    return query + bh * params.query_length * params.head_dim;
  }
  const T* key_rows(int64_t bh) const { return key + bh * params.key_length * params.head_dim; }
  const T* value_rows(int64_t bh) const {
    return value + bh * params.key_length * params.value_dim;
  }
  // The last key query i can see, plus one.
  int64_t visible_keys(int64_t query_index) const {
    return params.is_causal ? std::min(params.key_length, query_index + 1) : params.key_length;
  }

  // score_ij from the dot product q_i . k_j: scaled, masked (-inf), plus the additive mask.
  Acc score(int64_t bh, int64_t i, int64_t j, Acc q_dot_k) const {
    bool masked_out = params.is_causal && !attention::causally_visible(i, j);
    Acc additive = 0;
    if (params.mask != AttentionMask::None) {
      const auto& s = params.mask_strides;
      const int64_t at =
          (bh / params.heads) * s[0] + (bh % params.heads) * s[1] + i * s[2] + j * s[3];
      if (boolean_mask)
        masked_out = masked_out || !boolean_mask[at];
      else
        additive = static_cast<Acc>(additive_mask[at]);
    }
    return attention::masked_score(q_dot_k * scale, additive, masked_out);
  }

  // Whether a tile's element work can run in ops/cpu/attention_tiles.h's vectorised float loops:
  // nothing per element but the scale and is_causal.
  bool vectorised_tiles() const {
    return std::is_same_v<Acc, float> && params.mask == AttentionMask::None &&
           params.dropout_p == 0.0;
  }
  AttentionScoreTile score_tile(Acc* scores, int64_t stride, int64_t first_query,
                                int64_t query_count, int64_t first_key,
                                int64_t key_count) const requires std::is_same_v<Acc, float> {
    return {.scores = scores,
            .stride = stride,
            .rows = query_count,
            .columns = key_count,
            .first_query = first_query,
            .first_key = first_key,
            .is_causal = params.is_causal,
            .scale = scale};
  }

  Acc dropout_factor(int64_t bh, int64_t i, int64_t j) const {
    if (params.dropout_p == 0.0) return Acc(1);
    return attention::dropout_factor(
        params.dropout_start.seed,
        attention::dropout_counter(params.dropout_start.offset, bh, i, j, params.query_length,
                                   params.key_length),
        params.dropout_p, keep_scale);
  }

  const AttentionParams& params;
  const T* query;
  const T* key;
  const T* value;
  const bool* boolean_mask = nullptr;
  const T* additive_mask = nullptr;
  Acc scale, keep_scale;
};

// ---- forward ----

// Takes in a block of raw scores Q K^T of rows first_query.. against keys first_key..: scaled and
// masked, their maximum raises each row's online softmax (rescaling its accumulator row), and
// they are replaced by the kept weights exp(score - max) * dropout factor. In
// ops/cpu/attention_tiles.h's vectorised loops where they apply.
template <class T, class Acc>
void online_softmax_block(const Problem<T, Acc>& problem, AccRows<Acc>& scores,
                          std::vector<attention::OnlineSoftmax<Acc>>& rows,
                          AccRows<Acc>& accumulators, int64_t bh, int64_t first_query,
                          int64_t query_count, int64_t first_key, int64_t key_count) {
  if constexpr (std::is_same_v<Acc, float>) {
    if (problem.vectorised_tiles()) {
      cpu::online_softmax_tile(problem.score_tile(scores.row(0), scores.width, first_query,
                                                  query_count, first_key, key_count),
                               rows.data(), accumulators.row(0), accumulators.width);
      return;
    }
  }
  for (int64_t r = 0; r < query_count; ++r) {
    const int64_t i = first_query + r;
    attention::OnlineSoftmax<Acc>& row = rows[static_cast<size_t>(r)];
    Acc* row_scores = scores.row(r);
    Acc block_max = -attention::infinity<Acc>();
    for (int64_t c = 0; c < key_count; ++c) {
      row_scores[c] = problem.score(bh, i, first_key + c, row_scores[c]);
      block_max = std::max(block_max, row_scores[c]);
    }
    const Acc factor = row.raise_max(block_max);
    if (factor != Acc(1))
      for (int64_t e = 0; e < accumulators.width; ++e) accumulators.row(r)[e] *= factor;
    for (int64_t c = 0; c < key_count; ++c) {
      const Acc weight = row.weight(row_scores[c]);
      row.sum += weight;
      row_scores[c] =
          weight != Acc(0) ? weight * problem.dropout_factor(bh, i, first_key + c) : Acc(0);
    }
  }
}

template <class T>
void attention_forward_typed(const Tensor& out, const Tensor& logsumexp, const Tensor& query,
                             const Tensor& key, const Tensor& value, const Tensor& mask,
                             const AttentionParams& params) {
  using Acc = acc_t<T>;
  const Problem<T, Acc> problem(params, query, key, value, mask);
  const int64_t D = params.head_dim, Dv = params.value_dim;
  const int64_t query_length = params.query_length;
  const int64_t query_blocks = ceil_div(query_length, kForwardQueryBlock);
  T* out_data = out.data_ptr<T>();
  Acc* logsumexp_data = logsumexp.data_ptr<Acc>();

  use_calling_thread_blas();
  parallel_for(0, problem.heads_total() * query_blocks, 1, [&](int64_t begin, int64_t end) {
    AccRows<Acc> queries(kForwardQueryBlock, D), keys(kForwardKeyBlock, D),
        values(kForwardKeyBlock, Dv);
    AccRows<Acc> accumulators(kForwardQueryBlock, Dv), scores(kForwardQueryBlock, kForwardKeyBlock);
    std::vector<attention::OnlineSoftmax<Acc>> rows(kForwardQueryBlock);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t bh = task / query_blocks;
      const int64_t first_query = (task % query_blocks) * kForwardQueryBlock;
      const int64_t query_count = std::min(kForwardQueryBlock, query_length - first_query);
      queries.load(problem.query_rows(bh), first_query, query_count);
      accumulators.zero();
      std::fill(rows.begin(), rows.end(), attention::OnlineSoftmax<Acc>{});
      const int64_t key_end = problem.visible_keys(first_query + query_count - 1);
      for (int64_t first_key = 0; first_key < key_end; first_key += kForwardKeyBlock) {
        const int64_t key_count = std::min(kForwardKeyBlock, key_end - first_key);
        keys.load(problem.key_rows(bh), first_key, key_count);
        values.load(problem.value_rows(bh), first_key, key_count);
        // scores = Q K^T, then scaled and masked, then replaced by the kept weights.
        gemm<Acc>(CblasNoTrans, CblasTrans, query_count, key_count, D, queries.row(0), leading(D),
                  keys.row(0), leading(D), Acc(0), scores.row(0), kForwardKeyBlock);
        online_softmax_block(problem, scores, rows, accumulators, bh, first_query, query_count,
                             first_key, key_count);
        // accumulators += kept weights V
        gemm<Acc>(CblasNoTrans, CblasNoTrans, query_count, Dv, key_count, scores.row(0),
                  kForwardKeyBlock, values.row(0), leading(Dv), Acc(1), accumulators.row(0),
                  leading(Dv));
      }
      for (int64_t r = 0; r < query_count; ++r) {
        const int64_t row_index = bh * query_length + first_query + r;
        const Acc inverse_sum = rows[static_cast<size_t>(r)].inverse_sum();
        T* out_row = out_data + row_index * Dv;
        for (int64_t e = 0; e < Dv; ++e)
          out_row[e] = static_cast<T>(accumulators.row(r)[e] * inverse_sum);
        logsumexp_data[row_index] = rows[static_cast<size_t>(r)].logsumexp();
      }
    }
  });
}

void attention_forward(const Tensor& out, const Tensor& logsumexp, const Tensor& query,
                       const Tensor& key, const Tensor& value, const Tensor& mask,
                       const AttentionParams& params) {
  visit_floating(query.dtype(), "scaled_dot_product_attention", [&](auto zero) {
    attention_forward_typed<decltype(zero)>(out, logsumexp, query, key, value, mask, params);
  });
}

// ---- backward ----

// The operands of one (b, h, query block, key block) tile of the backward, in Acc.
template <class Acc>
struct BackwardTile {
  explicit BackwardTile(const AttentionParams& params)
      : queries(kBackwardQueryBlock, params.head_dim),
        grad_outs(kBackwardQueryBlock, params.value_dim),
        keys(kBackwardKeyBlock, params.head_dim),
        values(kBackwardKeyBlock, params.value_dim),
        dropped_probabilities(kBackwardQueryBlock, kBackwardKeyBlock),
        score_gradients(kBackwardQueryBlock, kBackwardKeyBlock) {}
  AccRows<Acc> queries, grad_outs, keys, values;
  AccRows<Acc> dropped_probabilities;  // P_ij * dropout factor: dV's weights
  AccRows<Acc> score_gradients;        // dScore_ij * scale: dK's and dQ's weights
};

// Fills tile.dropped_probabilities and tile.score_gradients for the loaded blocks: the raw
// products Q K^T and dO V^T first (one GEMM each), then the element-wise gradient of each score.
template <class T, class Acc>
void recompute_tile(const Problem<T, Acc>& problem, BackwardTile<Acc>& tile, int64_t bh,
                    int64_t first_query, int64_t query_count, int64_t first_key, int64_t key_count,
                    const Acc* logsumexp, const Acc* delta) {
  const AttentionParams& params = problem.params;
  const int64_t D = params.head_dim, Dv = params.value_dim;
  Acc* scores = tile.dropped_probabilities.row(0);        // Q K^T, then overwritten in place
  Acc* grad_probabilities = tile.score_gradients.row(0);  // dO V^T, then overwritten in place
  gemm<Acc>(CblasNoTrans, CblasTrans, query_count, key_count, D, tile.queries.row(0), leading(D),
            tile.keys.row(0), leading(D), Acc(0), scores, kBackwardKeyBlock);
  gemm<Acc>(CblasNoTrans, CblasTrans, query_count, key_count, Dv, tile.grad_outs.row(0),
            leading(Dv), tile.values.row(0), leading(Dv), Acc(0), grad_probabilities,
            kBackwardKeyBlock);
  const int64_t first_row = bh * params.query_length + first_query;
  if constexpr (std::is_same_v<Acc, float>) {
    if (problem.vectorised_tiles()) {
      cpu::score_gradient_tile(problem.score_tile(scores, kBackwardKeyBlock, first_query,
                                                  query_count, first_key, key_count),
                               grad_probabilities, logsumexp + first_row, delta + first_row);
      return;
    }
  }
  for (int64_t r = 0; r < query_count; ++r) {
    const int64_t i = first_query + r;
    const int64_t row_index = bh * params.query_length + i;
    for (int64_t c = 0; c < key_count; ++c) {
      const int64_t j = first_key + c, at = r * kBackwardKeyBlock + c;
      const Acc score = problem.score(bh, i, j, scores[at]);
      const Acc probability = attention::probability(score, logsumexp[row_index]);
      Acc dropped = 0, score_gradient = 0;
      if (probability != Acc(0)) {
        const Acc factor = problem.dropout_factor(bh, i, j);
        dropped = probability * factor;
        score_gradient = attention::score_gradient(probability, grad_probabilities[at] * factor,
                                                   delta[row_index]) *
                         problem.scale;
      }
      scores[at] = dropped;
      grad_probabilities[at] = score_gradient;
    }
  }
}

template <class T>
void attention_backward_typed(const Tensor& grad_query, const Tensor& grad_key,
                              const Tensor& grad_value, const Tensor& grad_out, const Tensor& query,
                              const Tensor& key, const Tensor& value, const Tensor& out,
                              const Tensor& logsumexp, const Tensor& mask,
                              const AttentionParams& params) {
  using Acc = acc_t<T>;
  const Problem<T, Acc> problem(params, query, key, value, mask);
  const int64_t D = params.head_dim, Dv = params.value_dim;
  const int64_t query_length = params.query_length, key_length = params.key_length;
  const int64_t heads_total = problem.heads_total();
  const T* grad_out_data = grad_out.data_ptr<T>();
  const T* out_data = out.data_ptr<T>();
  const Acc* logsumexp_data = logsumexp.data_ptr<Acc>();

  use_calling_thread_blas();
  // Delta_i = rowsum(dO_i * O_i), [B * H * T].
  std::vector<Acc> delta(static_cast<size_t>(heads_total * query_length));
  parallel_for(0, heads_total * query_length,
               std::max<int64_t>(1, kDefaultGrain / std::max<int64_t>(Dv, 1)),
               [&](int64_t begin, int64_t end) {
                 for (int64_t row = begin; row < end; ++row) {
                   Acc sum = 0;
                   for (int64_t e = 0; e < Dv; ++e)
                     sum += static_cast<Acc>(grad_out_data[row * Dv + e]) *
                            static_cast<Acc>(out_data[row * Dv + e]);
                   delta[static_cast<size_t>(row)] = sum;
                 }
               });

  // One task per (b, h): the key blocks in order, and for each the query blocks in order, so
  // that each tile's scores are recomputed once for all three gradients. dK and dV of a key block
  // sum over the query blocks in order, dQ of a query block over the key blocks in order.
  const int64_t query_blocks = ceil_div(query_length, kBackwardQueryBlock);
  T* grad_query_data = grad_query.data_ptr<T>();
  T* grad_key_data = grad_key.data_ptr<T>();
  T* grad_value_data = grad_value.data_ptr<T>();
  parallel_for(0, heads_total, 1, [&](int64_t begin, int64_t end) {
    BackwardTile<Acc> tile(params);
    AccRows<Acc> grad_keys(kBackwardKeyBlock, D), grad_values(kBackwardKeyBlock, Dv);
    AccRows<Acc> grad_queries(query_blocks * kBackwardQueryBlock, D);  // the head's [T, D]
    for (int64_t bh = begin; bh < end; ++bh) {
      grad_queries.zero();
      for (int64_t first_key = 0; first_key < key_length; first_key += kBackwardKeyBlock) {
        const int64_t key_count = std::min(kBackwardKeyBlock, key_length - first_key);
        tile.keys.load(problem.key_rows(bh), first_key, key_count);
        tile.values.load(problem.value_rows(bh), first_key, key_count);
        grad_keys.zero();
        grad_values.zero();
        // Under is_causal, queries before first_key see none of these keys.
        const int64_t query_start = params.is_causal ? std::min(query_length, first_key) /
                                                           kBackwardQueryBlock * kBackwardQueryBlock
                                                     : 0;
        for (int64_t first_query = query_start; first_query < query_length;
             first_query += kBackwardQueryBlock) {
          const int64_t query_count = std::min(kBackwardQueryBlock, query_length - first_query);
          tile.queries.load(problem.query_rows(bh), first_query, query_count);
          tile.grad_outs.load(grad_out_data + bh * query_length * Dv, first_query, query_count);
          recompute_tile(problem, tile, bh, first_query, query_count, first_key, key_count,
                         logsumexp_data, delta.data());
          // dV += (P * dropout)^T dO, dK += (dScore * scale)^T Q, dQ += (dScore * scale) K
          gemm<Acc>(CblasTrans, CblasNoTrans, key_count, Dv, query_count,
                    tile.dropped_probabilities.row(0), kBackwardKeyBlock, tile.grad_outs.row(0),
                    leading(Dv), Acc(1), grad_values.row(0), leading(Dv));
          gemm<Acc>(CblasTrans, CblasNoTrans, key_count, D, query_count,
                    tile.score_gradients.row(0), kBackwardKeyBlock, tile.queries.row(0), leading(D),
                    Acc(1), grad_keys.row(0), leading(D));
          gemm<Acc>(CblasNoTrans, CblasNoTrans, query_count, D, key_count,
                    tile.score_gradients.row(0), kBackwardKeyBlock, tile.keys.row(0), leading(D),
                    Acc(1), grad_queries.row(first_query), leading(D));
        }
        for (int64_t c = 0; c < key_count; ++c) {
          const int64_t key_index = bh * key_length + first_key + c;
          for (int64_t d = 0; d < D; ++d)
            grad_key_data[key_index * D + d] = static_cast<T>(grad_keys.row(c)[d]);
          for (int64_t e = 0; e < Dv; ++e)
            grad_value_data[key_index * Dv + e] = static_cast<T>(grad_values.row(c)[e]);
        }
      }
      for (int64_t i = 0; i < query_length; ++i) {
        T* grad_row = grad_query_data + (bh * query_length + i) * D;
        for (int64_t d = 0; d < D; ++d) grad_row[d] = static_cast<T>(grad_queries.row(i)[d]);
      }
    }
  });
}

void attention_backward(const Tensor& grad_query, const Tensor& grad_key, const Tensor& grad_value,
                        const Tensor& grad_out, const Tensor& query, const Tensor& key,
                        const Tensor& value, const Tensor& out, const Tensor& logsumexp,
                        const Tensor& mask, const AttentionParams& params) {
  visit_floating(query.dtype(), "scaled_dot_product_attention backward", [&](auto zero) {
    attention_backward_typed<decltype(zero)>(grad_query, grad_key, grad_value, grad_out, query, key,
                                             value, out, logsumexp, mask, params);
  });
}

}  // namespace

}  // namespace minidl::cpu

namespace minidl {

const AttentionKernels AttentionKernels::kCpu{.forward = cpu::attention_forward,
                                              .backward = cpu::attention_backward};

}  // namespace minidl
