// CPU scaled dot-product attention, blocked (Note [Blocked attention] in ops/attention_math.h).
//
// Forward: parallel_for over (b, h, block of kQueryBlock queries); each task walks the keys in
// blocks of kKeyBlock with an online softmax, holding one [kQueryBlock, kKeyBlock] block of
// scores and the blocks' operands converted to Acc (float, or double for float64).
// Backward: Delta = rowsum(dO * O) first, then two passes that recompute the scores' gradients
// tile by tile: one task per (b, h, key block) sums dK and dV over the query blocks in order,
// one task per (b, h, query block) sums dQ over the key blocks in order. Every element is
// summed by one task in a fixed order, so the result has the same bits at any thread count
// (the price: the scores are recomputed twice, as FlashAttention-2's deterministic backward).
//
// The products are plain loops over the Acc copies rather than calls into OpenBLAS: for
// D = 16..64 a tile's products are 16 x 64 x D, too small for a GEMM call to pay for its
// packing, and the loops keep the masking and the online softmax fused with them. (Not
// measured against ops/cpu/linalg.cpp's GEMM; the tiles would need it batched.)
#include <algorithm>
#include <type_traits>
#include <vector>

#include "minidl/core/parallel.h"
#include "minidl/ops/attention_kernels.h"
#include "minidl/ops/attention_math.h"

namespace minidl::cpu {

namespace {

constexpr int64_t kQueryBlock = 16;
constexpr int64_t kKeyBlock = 64;

// float for float32 and the 16-bit types, double for float64.
template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

int64_t block_count(int64_t length, int64_t block) { return (length + block - 1) / block; }

// sum_d a[d] * b[d] in independent lanes, which the compiler vectorises (a single running sum
// would be a serial dependency under strict floating-point rules); the lanes are added in a
// fixed order, so the result does not depend on anything but the inputs.
template <class Acc>
Acc dot(const Acc* a, const Acc* b, int64_t n) {
  constexpr int kLanes = 8;
  Acc lanes[kLanes] = {};
  int64_t d = 0;
  for (; d + kLanes <= n; d += kLanes)
    for (int l = 0; l < kLanes; ++l) lanes[l] += a[d + l] * b[d + l];
  Acc sum = 0;
  for (; d < n; ++d) sum += a[d] * b[d];
  for (int l = 0; l < kLanes; ++l) sum += lanes[l];
  return sum;
}

// y[d] += alpha * x[d]
template <class Acc>
void add_scaled(Acc* y, Acc alpha, const Acc* x, int64_t n) {
  for (int64_t d = 0; d < n; ++d) y[d] += alpha * x[d];
}

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
        keep_scale(static_cast<Acc>(1.0 / (1.0 - params.dropout_p))) {
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

template <class T>
void attention_forward_typed(const Tensor& out, const Tensor& logsumexp, const Tensor& query,
                             const Tensor& key, const Tensor& value, const Tensor& mask,
                             const AttentionParams& params) {
  using Acc = acc_t<T>;
  const Problem<T, Acc> problem(params, query, key, value, mask);
  const int64_t D = params.head_dim, Dv = params.value_dim;
  const int64_t query_length = params.query_length;
  const int64_t query_blocks = block_count(query_length, kQueryBlock);
  T* out_data = out.data_ptr<T>();
  Acc* logsumexp_data = logsumexp.data_ptr<Acc>();

  parallel_for(0, problem.heads_total() * query_blocks, 1, [&](int64_t begin, int64_t end) {
    AccRows<Acc> queries(kQueryBlock, D), keys(kKeyBlock, D), values(kKeyBlock, Dv);
    AccRows<Acc> accumulators(kQueryBlock, Dv), scores(kQueryBlock, kKeyBlock);
    std::vector<attention::OnlineSoftmax<Acc>> rows(kQueryBlock);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t bh = task / query_blocks;
      const int64_t first_query = (task % query_blocks) * kQueryBlock;
      const int64_t query_count = std::min(kQueryBlock, query_length - first_query);
      queries.load(problem.query_rows(bh), first_query, query_count);
      accumulators.zero();
      std::fill(rows.begin(), rows.end(), attention::OnlineSoftmax<Acc>{});
      const int64_t key_end = problem.visible_keys(first_query + query_count - 1);
      for (int64_t first_key = 0; first_key < key_end; first_key += kKeyBlock) {
        const int64_t key_count = std::min(kKeyBlock, key_end - first_key);
        keys.load(problem.key_rows(bh), first_key, key_count);
        values.load(problem.value_rows(bh), first_key, key_count);
        for (int64_t r = 0; r < query_count; ++r) {
          const int64_t i = first_query + r;
          Acc* row_scores = scores.row(r);
          Acc block_max = -attention::infinity<Acc>();
          for (int64_t c = 0; c < key_count; ++c) {
            row_scores[c] =
                problem.score(bh, i, first_key + c, dot(queries.row(r), keys.row(c), D));
            block_max = std::max(block_max, row_scores[c]);
          }
          Acc* accumulator = accumulators.row(r);
          const Acc factor = rows[static_cast<size_t>(r)].raise_max(block_max);
          if (factor != Acc(1))
            for (int64_t e = 0; e < Dv; ++e) accumulator[e] *= factor;
          for (int64_t c = 0; c < key_count; ++c) {
            const Acc weight = rows[static_cast<size_t>(r)].weight(row_scores[c]);
            rows[static_cast<size_t>(r)].sum += weight;
            const Acc kept = weight * problem.dropout_factor(bh, i, first_key + c);
            if (kept != Acc(0)) add_scaled(accumulator, kept, values.row(c), Dv);
          }
        }
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
      : queries(kQueryBlock, params.head_dim),
        grad_outs(kQueryBlock, params.value_dim),
        keys(kKeyBlock, params.head_dim),
        values(kKeyBlock, params.value_dim),
        dropped_probabilities(kQueryBlock, kKeyBlock),
        score_gradients(kQueryBlock, kKeyBlock) {}
  AccRows<Acc> queries, grad_outs, keys, values;
  AccRows<Acc> dropped_probabilities;  // P_ij * dropout factor: dV's weights
  AccRows<Acc> score_gradients;        // dScore_ij * scale: dK's and dQ's weights
};

// Fills tile.dropped_probabilities and tile.score_gradients for the loaded blocks.
template <class T, class Acc>
void recompute_tile(const Problem<T, Acc>& problem, BackwardTile<Acc>& tile, int64_t bh,
                    int64_t first_query, int64_t query_count, int64_t first_key, int64_t key_count,
                    const Acc* logsumexp, const Acc* delta) {
  const AttentionParams& params = problem.params;
  for (int64_t r = 0; r < query_count; ++r) {
    const int64_t i = first_query + r;
    const int64_t row_index = bh * params.query_length + i;
    for (int64_t c = 0; c < key_count; ++c) {
      const int64_t j = first_key + c;
      const Acc score =
          problem.score(bh, i, j, dot(tile.queries.row(r), tile.keys.row(c), params.head_dim));
      const Acc probability = attention::probability(score, logsumexp[row_index]);
      Acc dropped = 0, score_gradient = 0;
      if (probability != Acc(0)) {
        const Acc factor = problem.dropout_factor(bh, i, j);
        const Acc grad_probability =
            dot(tile.grad_outs.row(r), tile.values.row(c), params.value_dim) * factor;
        dropped = probability * factor;
        score_gradient =
            attention::score_gradient(probability, grad_probability, delta[row_index]) *
            problem.scale;
      }
      tile.dropped_probabilities.row(r)[c] = dropped;
      tile.score_gradients.row(r)[c] = score_gradient;
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

  // dK, dV: one task per (b, h, key block), the query blocks in order.
  const int64_t key_blocks = block_count(key_length, kKeyBlock);
  T* grad_key_data = grad_key.data_ptr<T>();
  T* grad_value_data = grad_value.data_ptr<T>();
  parallel_for(0, heads_total * key_blocks, 1, [&](int64_t begin, int64_t end) {
    BackwardTile<Acc> tile(params);
    AccRows<Acc> grad_keys(kKeyBlock, D), grad_values(kKeyBlock, Dv);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t bh = task / key_blocks;
      const int64_t first_key = (task % key_blocks) * kKeyBlock;
      const int64_t key_count = std::min(kKeyBlock, key_length - first_key);
      tile.keys.load(problem.key_rows(bh), first_key, key_count);
      tile.values.load(problem.value_rows(bh), first_key, key_count);
      grad_keys.zero();
      grad_values.zero();
      // Under is_causal, queries before first_key see none of these keys.
      const int64_t query_start =
          params.is_causal ? std::min(query_length, first_key) / kQueryBlock * kQueryBlock : 0;
      for (int64_t first_query = query_start; first_query < query_length;
           first_query += kQueryBlock) {
        const int64_t query_count = std::min(kQueryBlock, query_length - first_query);
        tile.queries.load(problem.query_rows(bh), first_query, query_count);
        tile.grad_outs.load(grad_out_data + bh * query_length * Dv, first_query, query_count);
        recompute_tile(problem, tile, bh, first_query, query_count, first_key, key_count,
                       logsumexp_data, delta.data());
        for (int64_t r = 0; r < query_count; ++r)
          for (int64_t c = 0; c < key_count; ++c) {
            const Acc dropped = tile.dropped_probabilities.row(r)[c];
            const Acc score_gradient = tile.score_gradients.row(r)[c];
            if (dropped != Acc(0))
              add_scaled(grad_values.row(c), dropped, tile.grad_outs.row(r), Dv);
            if (score_gradient != Acc(0))
              add_scaled(grad_keys.row(c), score_gradient, tile.queries.row(r), D);
          }
      }
      for (int64_t c = 0; c < key_count; ++c) {
        const int64_t key_index = bh * key_length + first_key + c;
        for (int64_t d = 0; d < D; ++d)
          grad_key_data[key_index * D + d] = static_cast<T>(grad_keys.row(c)[d]);
        for (int64_t e = 0; e < Dv; ++e)
          grad_value_data[key_index * Dv + e] = static_cast<T>(grad_values.row(c)[e]);
      }
    }
  });

  // dQ: one task per (b, h, query block), the key blocks in order.
  const int64_t query_blocks = block_count(query_length, kQueryBlock);
  T* grad_query_data = grad_query.data_ptr<T>();
  parallel_for(0, heads_total * query_blocks, 1, [&](int64_t begin, int64_t end) {
    BackwardTile<Acc> tile(params);
    AccRows<Acc> grad_queries(kQueryBlock, D);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t bh = task / query_blocks;
      const int64_t first_query = (task % query_blocks) * kQueryBlock;
      const int64_t query_count = std::min(kQueryBlock, query_length - first_query);
      tile.queries.load(problem.query_rows(bh), first_query, query_count);
      tile.grad_outs.load(grad_out_data + bh * query_length * Dv, first_query, query_count);
      grad_queries.zero();
      const int64_t key_end = problem.visible_keys(first_query + query_count - 1);
      for (int64_t first_key = 0; first_key < key_end; first_key += kKeyBlock) {
        const int64_t key_count = std::min(kKeyBlock, key_end - first_key);
        tile.keys.load(problem.key_rows(bh), first_key, key_count);
        tile.values.load(problem.value_rows(bh), first_key, key_count);
        recompute_tile(problem, tile, bh, first_query, query_count, first_key, key_count,
                       logsumexp_data, delta.data());
        for (int64_t r = 0; r < query_count; ++r)
          for (int64_t c = 0; c < key_count; ++c) {
            const Acc score_gradient = tile.score_gradients.row(r)[c];
            if (score_gradient != Acc(0))
              add_scaled(grad_queries.row(r), score_gradient, tile.keys.row(c), D);
          }
      }
      for (int64_t r = 0; r < query_count; ++r) {
        T* grad_row = grad_query_data + (bh * query_length + first_query + r) * D;
        for (int64_t d = 0; d < D; ++d) grad_row[d] = static_cast<T>(grad_queries.row(r)[d]);
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
