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

using testing::expect_matches;
using testing::expect_same_bits;
using testing::make_problem;
using testing::Outputs;
using testing::Problem;
using testing::run_cpu;
using testing::run_cuda;
using testing::TensorCoreCase;

class AttentionTensorCores : public ::testing::TestWithParam<TensorCoreCase> {};

TEST_P(AttentionTensorCores, MatchesTheCpu) {
  SKIP_WITHOUT_CUDA();
  const TensorCoreCase& c = GetParam();
  for (DType dtype : {kFloat16, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Problem problem = make_problem(c, dtype);
    const Outputs cpu = run_cpu(problem);
    const Outputs gpu =
        run_cuda(problem, tensor_core_attention_kernels(), tensor_core_attention_kernels());
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
      expect_matches(
          run_cuda(problem, tensor_core_attention_kernels(), cuda_core_attention_kernels()), cpu,
          dtype);
    }
    {
      SCOPED_TRACE("CUDA-core forward, tensor-core backward");
      expect_matches(
          run_cuda(problem, cuda_core_attention_kernels(), tensor_core_attention_kernels()), cpu,
          dtype);
    }
  }
}

TEST(AttentionTensorCoresDeterminism, TwoRunsGiveTheSameBits) {
  SKIP_WITHOUT_CUDA();
  const TensorCoreCase c{"Repeat", 2, 4, 200, 300, 64, 64, "additive", false};
  for (DType dtype : {kFloat16, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Problem problem = make_problem(c, dtype);
    const Outputs first =
        run_cuda(problem, tensor_core_attention_kernels(), tensor_core_attention_kernels());
    const Outputs second =
        run_cuda(problem, tensor_core_attention_kernels(), tensor_core_attention_kernels());
    expect_same_bits(first, second);
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
  EXPECT_ERROR_CONTAINS(
      run_cuda(problem, tensor_core_attention_kernels(), tensor_core_attention_kernels()),
      "scaled_dot_product_attention: the tensor-core kernels expected float16 or "
      "bfloat16");
}

}  // namespace
}  // namespace minidl
