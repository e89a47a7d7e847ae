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

#include "attention_tensor_cores_cases.h"
#include "minidl/core/cuda/device.h"
#include "minidl/ops/attention_kernels.h"
#include "minidl/ops/cuda_attention_implementations.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::bitwise_equal;
using testing::expect_matches;
using testing::make_problem;
using testing::Outputs;
using testing::Problem;
using testing::run_cpu;
using testing::TensorCoreCase;

enum class Kernels { TensorCores, CudaCores };

// Each implementation's own table (AttentionKernels::kCuda would choose by the environment).
const AttentionKernels& cuda_kernels(Kernels kernels) {
  return kernels == Kernels::TensorCores ? tensor_core_attention_kernels()
                                         : cuda_core_attention_kernels();
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

INSTANTIATE_TEST_SUITE_P(Cases, AttentionTensorCores,
                         ::testing::ValuesIn(testing::tensor_core_cases()),
                         [](const ::testing::TestParamInfo<TensorCoreCase>& info) {
                           return info.param.name;
                         });

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
  const Tensor shifted = query.view({-1}).slice(0, 2, query.numel());
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
