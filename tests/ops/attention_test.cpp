// scaled_dot_product_attention on the CPU: values and gradients against PyTorch's
// (tests/ops/attention_reference.h), the blocked kernels against a naive float64
// softmax(Q K^T) V written here (masks, causal, lengths that are not multiples of the blocks,
// dropout with the documented Philox mask), f64 gradient checks, thread-count repeatability of
// the backward, and the errors.
#include "minidl/ops/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "attention_reference.h"
#include "minidl/core/autograd/gradcheck.h"
#include "minidl/core/generator.h"
#include "minidl/ops/cuda_attention_implementations.h"
#include "minidl/ops/dropout_math.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::bitwise_equal;
using testing::wiggly;

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// ---- the tests' masks, as tools/reference/make_attention_reference.py writes them ----

// [T, S]: key j takes part for query i unless (3i + 5j) % 7 == 0; row 1 sees no key.
Tensor boolean_mask(int64_t query_length, int64_t key_length) {
  std::vector<uint8_t> keep;
  for (int64_t i = 0; i < query_length; ++i)
    for (int64_t j = 0; j < key_length; ++j) keep.push_back((3 * i + 5 * j) % 7 != 0 && i != 1);
  return from_host(keep.data(), {query_length, key_length}, kUInt8).to(kBool);
}

// [B, 1, T, S]: 0.5 sin(0.7 k), -inf where (i + 2j) % 5 == 0.
Tensor additive_mask(int64_t batch, int64_t query_length, int64_t key_length, DType dtype) {
  std::vector<double> values;
  for (int64_t k = 0; k < batch * query_length * key_length; ++k) {
    const int64_t i = k / key_length % query_length, j = k % key_length;
    values.push_back((i + 2 * j) % 5 == 0 ? -kInfinity : 0.5 * std::sin(0.7 * k));
  }
  return from_host(values.data(), {batch, 1, query_length, key_length}, kFloat64).to(dtype);
}

Shape with_tail(const std::vector<int64_t>& leading, int64_t rows, int64_t columns) {
  Shape sizes(leading.begin(), leading.end());
  sizes.push_back(rows);
  sizes.push_back(columns);
  return sizes;
}

Tensor reference_tensor(const std::vector<double>& values, const Shape& sizes) {
  return from_host(values.data(), sizes, kFloat64);
}

// ---- a naive float64 attention, written from the definition ----

struct NaiveOptions {
  Tensor mask;  // [B, H, T, S] after expanding, or undefined
  bool is_causal = false;
  double scale = 0.0;  // 0: 1 / sqrt(D)
  double dropout_p = 0.0;
  GeneratorState dropout_start;
};

// q [B, H, T, D], k [B, H, S, D], v [B, H, S, Dv] -> [B, H, T, Dv] in float64: the whole
// [T, S] matrix per head, softmax, then dropout of entry (b, h, i, j) by Philox counter
// offset + ((b * H + h) * T + i) * S + j (Note [Attention dropout]).
Tensor naive_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                       const NaiveOptions& options) {
  const int64_t B = query.size(0), H = query.size(1), T = query.size(2), D = query.size(3);
  const int64_t S = key.size(2), Dv = value.size(3);
  const std::vector<double> q = to_vector<double>(query);
  const std::vector<double> k = to_vector<double>(key);
  const std::vector<double> v = to_vector<double>(value);
  std::vector<double> mask;
  const bool boolean = options.mask.defined() && options.mask.dtype() == kBool;
  if (options.mask.defined())
    mask = to_vector<double>(options.mask.expand({B, H, T, S}).contiguous());
  const double scale = options.scale != 0.0 ? options.scale : 1.0 / std::sqrt(double(D));
  std::vector<double> out(static_cast<size_t>(B * H * T * Dv), 0.0);
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t i = 0; i < T; ++i) {
      std::vector<double> scores(static_cast<size_t>(S));
      double max = -kInfinity;
      for (int64_t j = 0; j < S; ++j) {
        double s = 0;
        for (int64_t d = 0; d < D; ++d) s += q[(bh * T + i) * D + d] * k[(bh * S + j) * D + d];
        s *= scale;
        const size_t at = static_cast<size_t>((bh * T + i) * S + j);
        if (options.mask.defined()) s = boolean ? (mask[at] != 0 ? s : -kInfinity) : s + mask[at];
        if (options.is_causal && j > i) s = -kInfinity;
        scores[static_cast<size_t>(j)] = s;
        max = std::max(max, s);
      }
      if (max == -kInfinity) continue;  // every key masked: 0, as PyTorch's CPU kernel
      double sum = 0;
      for (double& s : scores) sum += (s = std::exp(s - max));
      for (int64_t j = 0; j < S; ++j) {
        double p = scores[static_cast<size_t>(j)] / sum;
        if (options.dropout_p > 0) {
          const uint64_t counter =
              options.dropout_start.offset + static_cast<uint64_t>((bh * T + i) * S + j);
          p = dropout::keeps(options.dropout_start.seed, counter, options.dropout_p)
                  ? p / (1 - options.dropout_p)
                  : 0.0;
        }
        for (int64_t e = 0; e < Dv; ++e)
          out[static_cast<size_t>((bh * T + i) * Dv + e)] += p * v[(bh * S + j) * Dv + e];
      }
    }
  return from_host(out.data(), {B, H, T, Dv}, kFloat64);
}

// ---- against PyTorch ----

TEST(ScaledDotProductAttention, MatchesPyTorch) {
  for (const auto& ref : testing::kAttentionReferences) {
    SCOPED_TRACE(ref.name);
    const bool bfloat16 = std::string(ref.dtype) == "bfloat16";
    const DType dtype = bfloat16 ? kBFloat16 : kFloat32;
    const Shape query_sizes = with_tail(ref.leading, ref.query_length, ref.head_dim);
    const Shape key_sizes = with_tail(ref.leading, ref.key_length, ref.head_dim);
    const Shape value_sizes = with_tail(ref.leading, ref.key_length, ref.value_dim);
    const Shape out_sizes = with_tail(ref.leading, ref.query_length, ref.value_dim);
    Tensor q = wiggly(query_sizes, 0.0, dtype).requires_grad_();
    Tensor k = wiggly(key_sizes, 1.0, dtype).requires_grad_();
    Tensor v = wiggly(value_sizes, 2.0, dtype).requires_grad_();
    Tensor mask;
    if (std::string(ref.mask) == "boolean") mask = boolean_mask(ref.query_length, ref.key_length);
    if (std::string(ref.mask) == "additive")
      mask = additive_mask(ref.leading[0], ref.query_length, ref.key_length, dtype);
    std::optional<double> scale;
    if (ref.scale != 0.0) scale = ref.scale;
    Tensor out = scaled_dot_product_attention(q, k, v, mask, 0.0, ref.is_causal, scale);
    ASSERT_EQ(out.dtype(), dtype);
    sum(mul(out, wiggly(out_sizes, 3.0, dtype))).backward();
    // bfloat16: both sides round the output once from float32 accumulators, but PyTorch's
    // blocks sum in another order, so a last-bit difference (2^-8 relative) is allowed.
    const double atol = bfloat16 ? 2e-2 : 2e-6, rtol = bfloat16 ? 1e-2 : 1e-5;
    EXPECT_TRUE(all_close(out, reference_tensor(ref.out, out_sizes), atol, rtol));
    EXPECT_TRUE(all_close(q.grad(), reference_tensor(ref.grad_query, query_sizes), atol, rtol));
    EXPECT_TRUE(all_close(k.grad(), reference_tensor(ref.grad_key, key_sizes), atol, rtol));
    EXPECT_TRUE(all_close(v.grad(), reference_tensor(ref.grad_value, value_sizes), atol, rtol));
  }
}

// ---- against the naive float64 form ----

struct NaiveCase {
  const char* name;
  int64_t batch, heads, query_length, key_length, head_dim, value_dim;
  const char* mask;  // "none", "boolean", "additive"
  bool is_causal;
  double dropout_p;
};

class BlockedAgainstNaive : public ::testing::TestWithParam<NaiveCase> {};

TEST_P(BlockedAgainstNaive, AgreesInFloat64) {
  const NaiveCase& c = GetParam();
  const Tensor q = wiggly({c.batch, c.heads, c.query_length, c.head_dim}, 0.0, kFloat64);
  const Tensor k = wiggly({c.batch, c.heads, c.key_length, c.head_dim}, 1.0, kFloat64);
  const Tensor v = wiggly({c.batch, c.heads, c.key_length, c.value_dim}, 2.0, kFloat64);
  NaiveOptions options;
  options.is_causal = c.is_causal;
  options.dropout_p = c.dropout_p;
  if (std::string(c.mask) == "boolean") options.mask = boolean_mask(c.query_length, c.key_length);
  if (std::string(c.mask) == "additive")
    options.mask = additive_mask(c.batch, c.query_length, c.key_length, kFloat64);
  manual_seed(1234);
  options.dropout_start = default_generator().state();
  const Tensor out = scaled_dot_product_attention(q, k, v, options.mask, c.dropout_p, c.is_causal);
  EXPECT_TRUE(all_close(out, naive_attention(q, k, v, options), 1e-12, 1e-10));
  if (c.dropout_p > 0) {  // the call reserved its B * H * T * S counters (rounded up to 4)
    const uint64_t counters =
        static_cast<uint64_t>(c.batch * c.heads * c.query_length * c.key_length);
    EXPECT_EQ(default_generator().state().offset, (counters + 3) / 4 * 4);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BlockedAgainstNaive,
    ::testing::Values(
        // Lengths beside the blocks (16 queries, 64 keys): one short block, several, a ragged end.
        NaiveCase{"Tiny", 1, 1, 1, 1, 3, 2, "none", false, 0.0},
        NaiveCase{"RaggedBlocks", 2, 3, 37, 131, 16, 24, "none", false, 0.0},
        NaiveCase{"RaggedBlocksCausal", 2, 2, 37, 131, 16, 24, "none", true, 0.0},
        NaiveCase{"MoreQueriesThanKeysCausal", 1, 2, 100, 30, 8, 8, "none", true, 0.0},
        NaiveCase{"BooleanMask", 2, 2, 33, 70, 8, 12, "boolean", false, 0.0},
        NaiveCase{"AdditiveMask", 2, 3, 17, 65, 32, 8, "additive", false, 0.0},
        NaiveCase{"Dropout", 2, 2, 19, 67, 8, 8, "none", false, 0.3},
        NaiveCase{"DropoutMasked", 2, 2, 21, 40, 8, 4, "boolean", false, 0.5},
        NaiveCase{"DropoutCausal", 1, 3, 70, 40, 8, 4, "none", true, 0.25},
        NaiveCase{"NoKeys", 1, 2, 5, 0, 4, 3, "none", false, 0.0},
        NaiveCase{"NoValueFeatures", 1, 2, 5, 6, 4, 0, "none", false, 0.0}),
    [](const ::testing::TestParamInfo<NaiveCase>& info) { return info.param.name; });

TEST(ScaledDotProductAttention, EmptyDimsGiveZeroGradients) {
  for (const Shape& value_sizes : {Shape{1, 2, 6, 0}, Shape{1, 2, 0, 3}}) {
    const int64_t key_length = value_sizes[2];
    Tensor q = wiggly({1, 2, 5, 4}, 0.0, kFloat64).requires_grad_();
    Tensor k = wiggly({1, 2, key_length, 4}, 1.0, kFloat64).requires_grad_();
    Tensor v = wiggly(value_sizes, 2.0, kFloat64).requires_grad_();
    Tensor out = scaled_dot_product_attention(q, k, v);
    EXPECT_EQ(out.sizes(), (Shape{1, 2, 5, value_sizes[3]}));
    sum(out).backward();
    EXPECT_TRUE(all_close(q.grad(), zeros(q.sizes(), kFloat64), 0, 0));
  }
}

TEST(ScaledDotProductAttention, RowWithEveryKeyMaskedIsZeroWithZeroGradient) {
  // PyTorch 2.15 on the CPU gives 0 for such a row (its math path would give NaN).
  Tensor q = wiggly({1, 1, 3, 4}, 0.0, kFloat64).requires_grad_();
  Tensor k = wiggly({1, 1, 5, 4}, 1.0, kFloat64).requires_grad_();
  Tensor v = wiggly({1, 1, 5, 4}, 2.0, kFloat64).requires_grad_();
  std::vector<uint8_t> keep(15, 1);
  for (int j = 0; j < 5; ++j) keep[5 + j] = 0;  // query 1 sees nothing
  const Tensor mask = from_host(keep.data(), {3, 5}, kUInt8).to(kBool);
  Tensor out = scaled_dot_product_attention(q, k, v, mask);
  sum(out).backward();
  const std::vector<double> values = to_vector<double>(out);
  const std::vector<double> grad = to_vector<double>(q.grad());
  for (int e = 0; e < 4; ++e) {
    EXPECT_EQ(values[4 + e], 0.0);
    EXPECT_EQ(grad[4 + e], 0.0);
    EXPECT_NE(values[e], 0.0);
  }
  // The same through an additive mask of -inf.
  const Tensor additive = where(mask, zeros({3, 5}, kFloat64), full({3, 5}, -kInfinity, kFloat64));
  EXPECT_TRUE(
      bitwise_equal(scaled_dot_product_attention(q, k, v, additive).detach(), out.detach()));
}

TEST(ScaledDotProductAttention, DropoutMaskIsTheSameForwardAndBackward) {
  // The backward regenerates the mask: gradients equal those of the naive form with that mask,
  // checked by gradcheck with the generator put back before every evaluation.
  const Tensor q = wiggly({1, 2, 6, 4}, 0.0, kFloat64).requires_grad_();
  const Tensor k = wiggly({1, 2, 9, 4}, 1.0, kFloat64).requires_grad_();
  const Tensor v = wiggly({1, 2, 9, 3}, 2.0, kFloat64).requires_grad_();
  manual_seed(99);
  const GeneratorState start = default_generator().state();
  auto fn = [&](const std::vector<Tensor>& in) {
    default_generator().set_state(start);
    return scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.4);
  };
  EXPECT_TRUE(gradcheck(fn, {q, k, v}));
  // Some entries are dropped and some kept, so the mask matters.
  default_generator().set_state(start);
  const Tensor dropped = scaled_dot_product_attention(q, k, v, {}, 0.4).detach();
  const Tensor undropped = scaled_dot_product_attention(q, k, v).detach();
  EXPECT_FALSE(all_close(dropped, undropped, 1e-3, 1e-3));
}

TEST(ScaledDotProductAttention, DropoutOfOneGivesZeros) {
  // As PyTorch: every probability dropped, so the output and the gradients are 0.
  Tensor q = wiggly({1, 2, 4, 3}, 0.0).requires_grad_();
  Tensor k = wiggly({1, 2, 6, 3}, 1.0), v = wiggly({1, 2, 6, 3}, 2.0);
  Tensor out = scaled_dot_product_attention(q, k, v, {}, 1.0);
  EXPECT_TRUE(all_close(out, zeros({1, 2, 4, 3}), 0, 0));
  sum(out).backward();
  EXPECT_TRUE(all_close(q.grad(), zeros({1, 2, 4, 3}), 0, 0));
}

TEST(ScaledDotProductAttention, Float32MaskOnSixteenBitOperands) {
  // PyTorch accepts it; the mask is rounded to the operands' dtype.
  const Tensor q = wiggly({1, 2, 4, 8}, 0.0, kBFloat16), k = wiggly({1, 2, 6, 8}, 1.0, kBFloat16),
               v = wiggly({1, 2, 6, 8}, 2.0, kBFloat16);
  const Tensor mask = additive_mask(1, 4, 6, kFloat32);
  EXPECT_TRUE(bitwise_equal(scaled_dot_product_attention(q, k, v, mask),
                            scaled_dot_product_attention(q, k, v, mask.to(kBFloat16))));
}

TEST(ScaledDotProductAttention, MaskChangedInPlaceBeforeBackwardIsAnError) {
  Tensor q = wiggly({1, 1, 3, 4}, 0.0).requires_grad_();
  const Tensor k = wiggly({1, 1, 5, 4}, 1.0), v = wiggly({1, 1, 5, 4}, 2.0);
  Tensor mask = zeros({3, 5});
  Tensor out = scaled_dot_product_attention(q, k, v, mask);
  mask.fill_(1.0);  // backward would reread it
  EXPECT_THROW(sum(out).backward(), Error);
}

// ---- gradients ----

struct GradcheckCase {
  const char* name;
  const char* mask;
  bool is_causal;
};

class AttentionGradcheck : public ::testing::TestWithParam<GradcheckCase> {};

TEST_P(AttentionGradcheck, QueryKeyValue) {
  const GradcheckCase& c = GetParam();
  // T = 5, S = 7: not square, so causal's top-left alignment matters.
  const Tensor q = wiggly({2, 2, 5, 3}, 0.0, kFloat64).requires_grad_();
  const Tensor k = wiggly({2, 2, 7, 3}, 1.0, kFloat64).requires_grad_();
  const Tensor v = wiggly({2, 2, 7, 4}, 2.0, kFloat64).requires_grad_();
  Tensor mask;
  if (std::string(c.mask) == "boolean") mask = boolean_mask(5, 7);
  if (std::string(c.mask) == "additive") mask = additive_mask(2, 5, 7, kFloat64);
  auto fn = [&](const std::vector<Tensor>& in) {
    return scaled_dot_product_attention(in[0], in[1], in[2], mask, 0.0, c.is_causal);
  };
  const GradcheckResult result = gradcheck(fn, {q, k, v});
  EXPECT_TRUE(result) << result.message;
}

INSTANTIATE_TEST_SUITE_P(Cases, AttentionGradcheck,
                         ::testing::Values(GradcheckCase{"Plain", "none", false},
                                           GradcheckCase{"Causal", "none", true},
                                           GradcheckCase{"BooleanMask", "boolean", false},
                                           GradcheckCase{"AdditiveMask", "additive", false}),
                         [](const ::testing::TestParamInfo<GradcheckCase>& info) {
                           return info.param.name;
                         });

TEST(ScaledDotProductAttention, GradcheckAcrossBlocksAndThreeDims) {
  // 20 queries and 70 keys span two blocks of each; [B, T, D] input; a custom scale.
  const Tensor q = wiggly({2, 20, 2}, 0.0, kFloat64).requires_grad_();
  const Tensor k = wiggly({2, 70, 2}, 1.0, kFloat64).requires_grad_();
  const Tensor v = wiggly({2, 70, 2}, 2.0, kFloat64).requires_grad_();
  auto fn = [&](const std::vector<Tensor>& in) {
    return scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.0, true, 0.8);
  };
  const GradcheckResult result = gradcheck(fn, {q, k, v});
  EXPECT_TRUE(result) << result.message;
}

TEST(ScaledDotProductAttention, BackwardHasTheSameBitsAtAnyThreadCount) {
  const Tensor q = wiggly({2, 3, 45, 16}, 0.0, kFloat32);
  const Tensor k = wiggly({2, 3, 150, 16}, 1.0, kFloat32);
  const Tensor v = wiggly({2, 3, 150, 8}, 2.0, kFloat32);
  const Tensor upstream = wiggly({2, 3, 45, 8}, 3.0, kFloat32);
  auto gradients = [&](int64_t threads) {
    testing::ScopedThreadCount thread_count(threads);
    Tensor lq = q.clone().requires_grad_(), lk = k.clone().requires_grad_(),
           lv = v.clone().requires_grad_();
    manual_seed(5);
    Tensor out = scaled_dot_product_attention(lq, lk, lv, {}, 0.2, true);
    sum(mul(out, upstream)).backward();
    return std::vector<Tensor>{out.detach(), lq.grad(), lk.grad(), lv.grad()};
  };
  const std::vector<Tensor> one = gradients(1), several = gradients(3), many = gradients(8);
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_TRUE(bitwise_equal(one[i], several[i])) << i;
    EXPECT_TRUE(bitwise_equal(one[i], many[i])) << i;
  }
}

TEST(ScaledDotProductAttention, SixteenBitInputsAccumulateInFloat32) {
  const Tensor q = wiggly({1, 2, 30, 16}, 0.0, kFloat64);
  const Tensor k = wiggly({1, 2, 80, 16}, 1.0, kFloat64);
  const Tensor v = wiggly({1, 2, 80, 16}, 2.0, kFloat64);
  for (DType dtype : {kFloat16, kBFloat16}) {
    const Tensor q16 = q.to(dtype), k16 = k.to(dtype), v16 = v.to(dtype);
    const Tensor out = scaled_dot_product_attention(q16, k16, v16, {}, 0.0, true);
    EXPECT_EQ(out.dtype(), dtype);
    // Against float64 of the same rounded inputs: one rounding of the output.
    const Tensor exact = scaled_dot_product_attention(q16.to(kFloat64), k16.to(kFloat64),
                                                      v16.to(kFloat64), {}, 0.0, true);
    const double epsilon = dtype == kFloat16 ? 1.0 / 1024 : 1.0 / 128;
    EXPECT_TRUE(all_close(out, exact, 1e-4, epsilon)) << dtype;
  }
}

TEST(ScaledDotProductAttention, OutputKeepsLeadingDimsAndInputLayoutDoesNotMatter) {
  const Tensor q = wiggly({2, 3, 4, 6, 8}, 0.0, kFloat32);  // three leading dims
  const Tensor k = wiggly({2, 3, 4, 5, 8}, 1.0, kFloat32);
  const Tensor v = wiggly({2, 3, 4, 5, 7}, 2.0, kFloat32);
  const Tensor mask = boolean_mask(6, 5).view({1, 1, 6, 5}).expand({3, 4, 6, 5});
  const Tensor out = scaled_dot_product_attention(q, k, v, mask);
  EXPECT_EQ(out.sizes(), (Shape{2, 3, 4, 6, 7}));
  const Tensor flat = scaled_dot_product_attention(q.reshape({24, 6, 8}), k.reshape({24, 5, 8}),
                                                   v.reshape({24, 5, 7}), boolean_mask(6, 5));
  EXPECT_TRUE(all_close(out.reshape({24, 6, 7}), flat, 1e-6));
  // A transposed key ([B, H, S, D] made from [B, H, D, S]) gives the same as its contiguous copy.
  const Tensor kt = k.transpose(-1, -2).contiguous().transpose(-1, -2);
  EXPECT_TRUE(all_close(scaled_dot_product_attention(q, kt, v, mask), out, 1e-6));
}

// ---- errors ----

TEST(ScaledDotProductAttention, ErrorsNameTheOpAndWhatWasExpected) {
  const Tensor q = wiggly({2, 3, 4, 8}), k = wiggly({2, 3, 5, 8}), v = wiggly({2, 3, 5, 6});
  EXPECT_ERROR_CONTAINS(scaled_dot_product_attention(q, k, v, ones({4, 5}, kBool), 0.0, true),
                        "scaled_dot_product_attention: expected attn_mask or is_causal, not both");
  EXPECT_ERROR_CONTAINS(scaled_dot_product_attention(q, k.to(kFloat64), v),
                        "scaled_dot_product_attention: expected query, key and value of one dtype");
  EXPECT_ERROR_CONTAINS(scaled_dot_product_attention(q.to(kInt64), k.to(kInt64), v.to(kInt64)),
                        "scaled_dot_product_attention: expected a floating-point query");
  EXPECT_ERROR_CONTAINS(scaled_dot_product_attention(q, wiggly({2, 3, 5, 7}), v),
                        "expected key's last dim (D) to equal query's");
  EXPECT_ERROR_CONTAINS(scaled_dot_product_attention(q, k, wiggly({2, 3, 6, 6})),
                        "expected value's second-to-last dim (S) to equal key's");
  EXPECT_ERROR_CONTAINS(scaled_dot_product_attention(q, wiggly({2, 2, 5, 8}), v),
                        "expected query, key and value with the same leading (batch) dims");
  EXPECT_ERROR_CONTAINS(scaled_dot_product_attention(q, wiggly({3, 5, 8}), v),
                        "with the same number of dims (at least 2)");
  EXPECT_ERROR_CONTAINS(
      scaled_dot_product_attention(q, k, v, ones({4, 4}, kBool)),
      "expected attn_mask broadcastable to [2, 3, 4, 5] ([..., T, S]), got [4, 4]");
  EXPECT_ERROR_CONTAINS(scaled_dot_product_attention(q, k, v, ones({1, 2, 3, 4, 5}, kBool)),
                        "expected attn_mask broadcastable to");
  EXPECT_ERROR_CONTAINS(scaled_dot_product_attention(q, k, v, ones({4, 5}, kInt64)),
                        "expected a boolean attn_mask, a float32 one or one of the query's dtype "
                        "(float32), got int64");
  EXPECT_ERROR_CONTAINS(scaled_dot_product_attention(q.to(kBFloat16), k.to(kBFloat16),
                                                     v.to(kBFloat16), ones({4, 5}, kFloat16)),
                        "got float16");
  EXPECT_ERROR_CONTAINS(scaled_dot_product_attention(q, k, v, {}, 1.5),
                        "expected dropout_p in [0, 1], got 1.5");
  EXPECT_ERROR_CONTAINS(scaled_dot_product_attention(q, k, v, {}, -0.1),
                        "expected dropout_p in [0, 1]");
  EXPECT_ERROR_CONTAINS(scaled_dot_product_attention(q, k, v, zeros({4, 5}).requires_grad_()),
                        "scaled_dot_product_attention: no gradient flows to attn_mask");
  EXPECT_ERROR_CONTAINS(scaled_dot_product_attention(q, Tensor(), v),
                        "scaled_dot_product_attention: argument 'key' is an undefined tensor");
}

// MINIDL_CUDA_ATTENTION's values (ops/cuda_attention_implementations.h), in any build.
TEST(CudaAttentionSelection, NamesTheThreeImplementationsAndRefusesOthers) {
  EXPECT_EQ(parse_cuda_attention(""), CudaAttention::Auto);
  EXPECT_EQ(parse_cuda_attention("auto"), CudaAttention::Auto);
  EXPECT_EQ(parse_cuda_attention("cuda-cores"), CudaAttention::CudaCores);
  EXPECT_EQ(parse_cuda_attention("tensor-cores"), CudaAttention::TensorCores);
  EXPECT_EQ(parse_cuda_attention("cudnn"), CudaAttention::Cudnn);
  EXPECT_ERROR_CONTAINS(parse_cuda_attention("cuDNN"),
                        "MINIDL_CUDA_ATTENTION: expected \"auto\", \"cudnn\", \"tensor-cores\" "
                        "or \"cuda-cores\" (or unset), got \"cuDNN\"");
}

}  // namespace
}  // namespace minidl
