// The tensor-core attention kernels (ops/cuda/attention_tensor_cores.cu), called through their
// entry points rather than MINIDL_CUDA_ATTENTION, against the CPU kernels in float16 and
// bfloat16: out, logsumexp and the three gradients, causal and not, T != S, ragged tiles,
// D and Dv of 16 to 128, boolean and additive masks and a fully masked row; the logsumexp
// exchanged with the CUDA-core kernels; the same bits on two runs; which problems fit.
#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "minidl/core/cuda/cuda.h"
#include "minidl/ops/attention_kernels.h"
#include "minidl/ops/attention_tensor_core_kernels.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::bitwise_equal;
using testing::wiggly;

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
Tensor boolean_mask(int64_t query_length, int64_t key_length) {
  std::vector<uint8_t> keep;
  for (int64_t i = 0; i < query_length; ++i)
    for (int64_t j = 0; j < key_length; ++j) keep.push_back((3 * i + 5 * j) % 7 != 0 && i != 1);
  return from_host(keep.data(), {query_length, key_length}, kUInt8).to(kBool);
}

// [B, T, S] in dtype, broadcast over heads: 0.5 sin(0.7 k), -inf where (i + 2j) % 5 == 0, and
// all of row 2 -inf (a fully masked row).
Tensor additive_mask(int64_t batch, int64_t query_length, int64_t key_length, DType dtype) {
  std::vector<double> values;
  for (int64_t k = 0; k < batch * query_length * key_length; ++k) {
    const int64_t i = k / key_length % query_length, j = k % key_length;
    values.push_back((i + 2 * j) % 5 == 0 || i == 2 ? -std::numeric_limits<double>::infinity()
                                                    : 0.5 * std::sin(0.7 * static_cast<double>(k)));
  }
  return from_host(values.data(), {batch, query_length, key_length}, kFloat64).to(dtype);
}

Problem make_problem(const TensorCoreCase& c, DType dtype) {
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

enum class Kernels { TensorCores, CudaCores };

// Each implementation's own table (AttentionKernels::kCuda would choose by the environment).
const AttentionKernels& cuda_kernels(Kernels kernels) {
  return kernels == Kernels::TensorCores ? tensor_core_attention_kernels()
                                         : cuda_core_attention_kernels();
}

Outputs run_cpu(const Problem& p) {
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

// forward with one implementation, backward with another (each reading the other's logsumexp
// when they differ).
Outputs run_cuda(const Problem& p, Kernels forward_kernels, Kernels backward_kernels) {
  const AttentionParams& params = p.params;
  const Tensor query = p.query.cuda(), key = p.key.cuda(), value = p.value.cuda();
  const Tensor grad_out = p.grad_out.cuda();
  const Tensor mask = p.mask.defined() ? p.mask.cuda() : Tensor();
  Tensor out =
      empty({params.batch, params.heads, params.query_length, params.value_dim}, query.options());
  Tensor logsumexp =
      empty({params.batch, params.heads, params.query_length}, query.options().dtype(kFloat32));
  cuda_kernels(forward_kernels).forward(out, logsumexp, query, key, value, mask, params);
  Tensor grad_query = empty(query.sizes(), query.options());
  Tensor grad_key = empty(key.sizes(), key.options());
  Tensor grad_value = empty(value.sizes(), value.options());
  cuda_kernels(backward_kernels)
      .backward(grad_query, grad_key, grad_value, grad_out, query, key, value, out, logsumexp, mask,
                params);
  return {out.cpu(), logsumexp.cpu(), grad_query.cpu(), grad_key.cpu(), grad_value.cpu()};
}

// logsumexps agree: both +inf (a fully masked row) or within atol + rtol |expected|.
::testing::AssertionResult logsumexp_close(const Tensor& actual, const Tensor& expected) {
  const std::vector<float> a = to_vector<float>(actual), e = to_vector<float>(expected);
  if (a.size() != e.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t k = 0; k < a.size(); ++k) {
    const bool both_infinite = std::isinf(a[k]) && std::isinf(e[k]) && a[k] == e[k];
    if (!both_infinite && !(std::abs(a[k] - e[k]) <= 1e-4f + 1e-4f * std::abs(e[k])))
      return ::testing::AssertionFailure() << "row " << k << ": " << a[k] << " vs " << e[k];
  }
  return ::testing::AssertionSuccess();
}

// Both sides compute from the same 16-bit inputs in float; the tensor-core kernels also round
// P and dS to the input dtype for their products (unit roundoff 2^-11 in float16, 2^-8 in
// bfloat16), sum in other orders, and both round results of magnitude up to a few units to the
// dtype, where neighbouring values differ by an ulp: a few ulps at 1 bound the difference.
// The logsumexp is float on both sides from unrounded weights: only the summation order and
// expf differ.
void expect_matches(const Outputs& actual, const Outputs& expected, DType dtype) {
  const double atol = dtype == kFloat16 ? 5e-3 : 3e-2;
  const double rtol = dtype == kFloat16 ? 5e-3 : 2e-2;
  EXPECT_EQ(actual.out.dtype(), dtype);
  EXPECT_TRUE(all_close(actual.out, expected.out, atol, rtol)) << "out";
  EXPECT_TRUE(logsumexp_close(actual.logsumexp, expected.logsumexp)) << "logsumexp";
  EXPECT_TRUE(all_close(actual.grad_query, expected.grad_query, atol, rtol)) << "grad_query";
  EXPECT_TRUE(all_close(actual.grad_key, expected.grad_key, atol, rtol)) << "grad_key";
  EXPECT_TRUE(all_close(actual.grad_value, expected.grad_value, atol, rtol)) << "grad_value";
}

class AttentionTensorCores : public ::testing::TestWithParam<TensorCoreCase> {};

TEST_P(AttentionTensorCores, MatchesTheCpu) {
  SKIP_WITHOUT_CUDA();
  const TensorCoreCase& c = GetParam();
  for (DType dtype : {kFloat16, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Problem problem = make_problem(c, dtype);
    const Outputs cpu = run_cpu(problem);
    const Outputs gpu = run_cuda(problem, Kernels::TensorCores, Kernels::TensorCores);
    expect_matches(gpu, cpu, dtype);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, AttentionTensorCores,
    ::testing::Values(
        // The tiles are 64 queries by 64 keys.
        TensorCoreCase{"WholeTiles", 2, 3, 64, 128, 64, 64, "none", false},
        TensorCoreCase{"RaggedTiles", 2, 2, 37, 131, 64, 64, "none", false},
        TensorCoreCase{"CausalMoreKeys", 2, 2, 100, 150, 64, 64, "none", true},
        TensorCoreCase{"CausalMoreQueries", 1, 2, 150, 70, 64, 64, "none", true},
        TensorCoreCase{"CausalWideHeads", 1, 2, 130, 130, 128, 128, "none", true},
        TensorCoreCase{"WideKeysNarrowValues", 1, 2, 77, 90, 128, 32, "none", false},
        TensorCoreCase{"NarrowKeysWideValues", 1, 2, 65, 129, 16, 128, "none", true},
        TensorCoreCase{"BooleanMask", 2, 2, 70, 100, 64, 64, "boolean", false},
        TensorCoreCase{"AdditiveMask", 2, 3, 33, 95, 128, 128, "additive", false},
        TensorCoreCase{"AdditiveMaskNarrow", 1, 2, 66, 20, 48, 80, "additive", false}),
    [](const ::testing::TestParamInfo<TensorCoreCase>& info) { return info.param.name; });

TEST(AttentionTensorCoresExchange, EachBackwardTakesTheOthersLogsumexp) {
  SKIP_WITHOUT_CUDA();
  const TensorCoreCase c{"Exchange", 2, 2, 90, 110, 64, 64, "boolean", false};
  for (DType dtype : {kFloat16, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Problem problem = make_problem(c, dtype);
    const Outputs cpu = run_cpu(problem);
    {
      SCOPED_TRACE("tensor-core forward, CUDA-core backward");
      expect_matches(run_cuda(problem, Kernels::TensorCores, Kernels::CudaCores), cpu, dtype);
    }
    {
      SCOPED_TRACE("CUDA-core forward, tensor-core backward");
      expect_matches(run_cuda(problem, Kernels::CudaCores, Kernels::TensorCores), cpu, dtype);
    }
  }
}

TEST(AttentionTensorCoresDeterminism, TwoRunsGiveTheSameBits) {
  SKIP_WITHOUT_CUDA();
  const TensorCoreCase c{"Repeat", 2, 4, 200, 300, 64, 64, "additive", false};
  for (DType dtype : {kFloat16, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Problem problem = make_problem(c, dtype);
    const Outputs first = run_cuda(problem, Kernels::TensorCores, Kernels::TensorCores);
    const Outputs second = run_cuda(problem, Kernels::TensorCores, Kernels::TensorCores);
    EXPECT_TRUE(bitwise_equal(first.out, second.out)) << "out";
    EXPECT_TRUE(bitwise_equal(first.logsumexp, second.logsumexp)) << "logsumexp";
    EXPECT_TRUE(bitwise_equal(first.grad_query, second.grad_query)) << "grad_query";
    EXPECT_TRUE(bitwise_equal(first.grad_key, second.grad_key)) << "grad_key";
    EXPECT_TRUE(bitwise_equal(first.grad_value, second.grad_value)) << "grad_value";
  }
}

TEST(AttentionTensorCoresFit, OnlyTheSixteenBitDtypesAndHeadDimsOfSixteens) {
  SKIP_WITHOUT_CUDA();
  const TensorCoreCase c{"Fit", 1, 2, 10, 12, 64, 64, "none", false};
  const Problem problem = make_problem(c, kBFloat16);
  const Tensor query = problem.query.cuda();
  EXPECT_TRUE(tensor_core_attention_fits(problem.params, {&query}));
  const Tensor query_float = query.to(kFloat32);
  EXPECT_FALSE(tensor_core_attention_fits(problem.params, {&query_float}));
  AttentionParams params = problem.params;
  params.dropout_p = 0.1;
  EXPECT_FALSE(tensor_core_attention_fits(params, {&query}));
  for (int64_t dim : {8, 72, 256}) {
    params = problem.params;
    params.head_dim = dim;
    EXPECT_FALSE(tensor_core_attention_fits(params, {&query})) << "D = " << dim;
    params = problem.params;
    params.value_dim = dim;
    EXPECT_FALSE(tensor_core_attention_fits(params, {&query})) << "Dv = " << dim;
  }
  params = problem.params;
  params.key_length = 0;
  EXPECT_FALSE(tensor_core_attention_fits(params, {&query}));
  // A view two elements in: 4-byte aligned, not 16.
  const Tensor shifted = query.view({-1}).slice(0, 2, query.numel()).contiguous();
  EXPECT_FALSE(tensor_core_attention_fits(problem.params, {&query, &shifted}));
}

TEST(AttentionTensorCoresFit, TheEntryPointsRefuseWhatDoesNotFit) {
  SKIP_WITHOUT_CUDA();
  const TensorCoreCase c{"Refuse", 1, 1, 8, 8, 64, 64, "none", false};
  Problem problem = make_problem(c, kFloat32);
  EXPECT_ERROR_CONTAINS(run_cuda(problem, Kernels::TensorCores, Kernels::TensorCores),
                        "scaled_dot_product_attention: the tensor-core kernels expected float16 or "
                        "bfloat16");
}

}  // namespace
}  // namespace minidl
