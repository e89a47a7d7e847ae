#pragma once
// What the two tests of the tensor-core attention kernels share: the cases, the problems built
// from them, the CPU's results and the tolerances; the cuDNN attention's test uses the problems,
// results and tolerances (cuDNN too multiplies 16-bit P and dS on tensor cores).
//   tests/ops/attention_tensor_cores_cuda_test.cpp         on a GPU (skips without one)
//   tests/ops/attention_tensor_cores_emulation_test.cpp    the kernels' code on the CPU, with
//                                                          WMMA and thread blocks emulated
//   tests/ops/attention_cudnn_cuda_test.cpp                cuDNN's, on a GPU
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "minidl/ops/attention_kernels.h"
#include "test_util.h"

namespace minidl::testing {

struct TensorCoreCase {
  const char* name;
  int64_t batch, heads, query_length, key_length, head_dim, value_dim;
  const char* mask;  // "none", "boolean", "additive"
  bool is_causal;
};

// The kernels' inputs on the CPU, and the params that describe them.
struct Problem {
  Tensor query, key, value, grad_out, mask;
  AttentionParams params;
};

// [T, S], broadcast over batch and heads: key j takes part for query i unless
// (3i + 5j) % 7 == 0; row 1 sees no key (a fully masked row).
inline Tensor boolean_mask(int64_t query_length, int64_t key_length) {
  std::vector<uint8_t> keep;
  for (int64_t i = 0; i < query_length; ++i)
    for (int64_t j = 0; j < key_length; ++j) keep.push_back((3 * i + 5 * j) % 7 != 0 && i != 1);
  return from_host(keep.data(), {query_length, key_length}, kUInt8).to(kBool);
}

// [B, T, S] in dtype, broadcast over heads: 0.5 sin(0.7 k), -inf where (i + 2j) % 5 == 0, and
// all of row 2 -inf (a fully masked row).
inline Tensor additive_mask(int64_t batch, int64_t query_length, int64_t key_length, DType dtype) {
  std::vector<double> values;
  for (int64_t k = 0; k < batch * query_length * key_length; ++k) {
    const int64_t i = k / key_length % query_length, j = k % key_length;
    values.push_back((i + 2 * j) % 5 == 0 || i == 2 ? -std::numeric_limits<double>::infinity()
                                                    : 0.5 * std::sin(0.7 * static_cast<double>(k)));
  }
  return from_host(values.data(), {batch, query_length, key_length}, kFloat64).to(dtype);
}

inline Problem make_problem(const TensorCoreCase& c, DType dtype) {
  Problem p;
  p.query = wiggly({c.batch, c.heads, c.query_length, c.head_dim}, 0.0, dtype);
  p.key = wiggly({c.batch, c.heads, c.key_length, c.head_dim}, 1.0, dtype);
  p.value = wiggly({c.batch, c.heads, c.key_length, c.value_dim}, 2.0, dtype);
  p.grad_out = wiggly({c.batch, c.heads, c.query_length, c.value_dim}, 3.0, dtype);
  AttentionParams& params = p.params;
  params.batch = c.batch;
  params.heads = c.heads;
  params.query_length = c.query_length;
  params.key_length = c.key_length;
  params.head_dim = c.head_dim;
  params.value_dim = c.value_dim;
  params.scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  params.is_causal = c.is_causal;
  if (std::string(c.mask) == "boolean") {
    p.mask = boolean_mask(c.query_length, c.key_length);
    params.mask = AttentionMask::Boolean;
    params.mask_strides = {0, 0, c.key_length, 1};
  } else if (std::string(c.mask) == "additive") {
    p.mask = additive_mask(c.batch, c.query_length, c.key_length, dtype);
    params.mask = AttentionMask::Additive;
    params.mask_strides = {c.query_length * c.key_length, 0, c.key_length, 1};
  }
  return p;
}

struct Outputs {
  Tensor out, logsumexp, grad_query, grad_key, grad_value;  // on the CPU
};

inline Outputs run_cpu(const Problem& p) {
  const AttentionParams& params = p.params;
  Tensor out =
      empty({params.batch, params.heads, params.query_length, params.value_dim}, p.query.options());
  Tensor logsumexp =
      empty({params.batch, params.heads, params.query_length}, p.query.options().dtype(kFloat32));
  AttentionKernels::kCpu.forward(out, logsumexp, p.query, p.key, p.value, p.mask, params);
  Tensor grad_query = empty(p.query.sizes(), p.query.options());
  Tensor grad_key = empty(p.key.sizes(), p.key.options());
  Tensor grad_value = empty(p.value.sizes(), p.value.options());
  AttentionKernels::kCpu.backward(grad_query, grad_key, grad_value, p.grad_out, p.query, p.key,
                                  p.value, out, logsumexp, p.mask, params);
  return {out, logsumexp, grad_query, grad_key, grad_value};
}

// forward with one CUDA implementation, backward with another (each reading the other's
// logsumexp when they differ), on copies of the problem on the GPU; the results on the CPU.
inline Outputs run_cuda(const Problem& p, const AttentionKernels& forward_kernels,
                        const AttentionKernels& backward_kernels) {
  const AttentionParams& params = p.params;
  const Tensor query = p.query.cuda(), key = p.key.cuda(), value = p.value.cuda();
  const Tensor grad_out = p.grad_out.cuda();
  const Tensor mask = p.mask.defined() ? p.mask.cuda() : Tensor();
  Tensor out =
      empty({params.batch, params.heads, params.query_length, params.value_dim}, query.options());
  Tensor logsumexp =
      empty({params.batch, params.heads, params.query_length}, query.options().dtype(kFloat32));
  forward_kernels.forward(out, logsumexp, query, key, value, mask, params);
  Tensor grad_query = empty(query.sizes(), query.options());
  Tensor grad_key = empty(key.sizes(), key.options());
  Tensor grad_value = empty(value.sizes(), value.options());
  backward_kernels.backward(grad_query, grad_key, grad_value, grad_out, query, key, value, out,
                            logsumexp, mask, params);
  return {out.cpu(), logsumexp.cpu(), grad_query.cpu(), grad_key.cpu(), grad_value.cpu()};
}

// Every output of two runs has the same bits.
inline void expect_same_bits(const Outputs& first, const Outputs& second) {
  EXPECT_TRUE(bitwise_equal(first.out, second.out)) << "out";
  EXPECT_TRUE(bitwise_equal(first.logsumexp, second.logsumexp)) << "logsumexp";
  EXPECT_TRUE(bitwise_equal(first.grad_query, second.grad_query)) << "grad_query";
  EXPECT_TRUE(bitwise_equal(first.grad_key, second.grad_key)) << "grad_key";
  EXPECT_TRUE(bitwise_equal(first.grad_value, second.grad_value)) << "grad_value";
}

// logsumexps agree: both +inf (a fully masked row) or within atol + rtol |expected|.
inline ::testing::AssertionResult logsumexp_close(const Tensor& actual, const Tensor& expected) {
  const std::vector<float> a = to_vector<float>(actual), e = to_vector<float>(expected);
  if (a.size() != e.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t k = 0; k < a.size(); ++k) {
    const bool both_infinite = std::isinf(a[k]) && std::isinf(e[k]) && a[k] == e[k];
    if (!both_infinite && !(std::abs(a[k] - e[k]) <= 1e-4f + 1e-4f * std::abs(e[k])))
      return ::testing::AssertionFailure() << "row " << k << ": " << a[k] << " vs " << e[k];
  }
  return ::testing::AssertionSuccess();
}

// Both sides compute from the same 16-bit inputs in float and round their results to the dtype
// (unit roundoff u = 2^-11 in float16, 2^-8 in bfloat16), where neighbouring values of
// magnitude up to a few units differ by an ulp: atol and rtol of a few ulps at 1 cover that.
// The tensor-core kernels also round P and dS to the dtype for their products, so dV, dK and
// dQ sum terms perturbed by up to u each, of either sign, over up to T or S of them; their
// error scales with the terms, which cancel, rather than with each result: a normwise allowance
// of 8u times the gradient's largest element covers it (measured under the host emulation, at
// most 2.4% of the largest |dK| in bfloat16, 0.15% in float16: NarrowKeysWideValues, whose
// dP = dO . V sums 128 products). The logsumexp is float on both sides from unrounded weights:
// only the summation order and expf differ (measured: at most 1.4e-6).
inline void expect_matches(const Outputs& actual, const Outputs& expected, DType dtype) {
  const double atol = dtype == kFloat16 ? 5e-3 : 3e-2;
  const double rtol = dtype == kFloat16 ? 5e-3 : 2e-2;
  const double unit_roundoff = dtype == kFloat16 ? 0x1p-11 : 0x1p-8;
  const auto gradient_close = [&](const Tensor& gradient, const Tensor& reference) {
    return all_close(gradient, reference, atol + 8 * unit_roundoff * largest_magnitude(reference),
                     rtol);
  };
  EXPECT_EQ(actual.out.dtype(), dtype);
  EXPECT_TRUE(all_close(actual.out, expected.out, atol, rtol)) << "out";
  EXPECT_TRUE(logsumexp_close(actual.logsumexp, expected.logsumexp)) << "logsumexp";
  EXPECT_TRUE(gradient_close(actual.grad_query, expected.grad_query)) << "grad_query";
  EXPECT_TRUE(gradient_close(actual.grad_key, expected.grad_key)) << "grad_key";
  EXPECT_TRUE(gradient_close(actual.grad_value, expected.grad_value)) << "grad_value";
}

// The cases both tests run. The tiles are 64 queries by 64 keys.
inline std::vector<TensorCoreCase> tensor_core_cases() {
  return {// The tiles are 64 queries by 64 keys.
          {"WholeTiles", 2, 3, 64, 128, 64, 64, "none", false},
          {"RaggedTiles", 2, 2, 37, 131, 64, 64, "none", false},
          {"CausalMoreKeys", 2, 2, 100, 150, 64, 64, "none", true},
          {"CausalMoreQueries", 1, 2, 150, 70, 64, 64, "none", true},
          {"CausalWideHeads", 1, 2, 130, 130, 128, 128, "none", true},
          {"WideKeysNarrowValues", 1, 2, 77, 90, 128, 32, "none", false},
          {"NarrowKeysWideValues", 1, 2, 65, 129, 16, 128, "none", true},
          {"BooleanMask", 2, 2, 70, 100, 64, 64, "boolean", false},
          {"AdditiveMask", 2, 3, 33, 95, 128, 128, "additive", false},
          {"AdditiveMaskNarrow", 1, 2, 66, 20, 48, 80, "additive", false}};
}

}  // namespace minidl::testing
