// The cuDNN attention (ops/cuda/attention_cudnn.cpp), called through its entry points rather than
// MINIDL_CUDA_ATTENTION, against the CPU kernels in float16 and bfloat16: out, logsumexp and the
// three gradients, causal and not, T != S, D of 32 to 128; the logsumexp exchanged with the
// CUDA-core kernels both ways; the same bits on two runs; which problems fit; and what a build
// without the cuDNN frontend says.
#include <gtest/gtest.h>

#include <initializer_list>
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

#define SKIP_WITHOUT_CUDNN_ATTENTION()                                                   \
  do {                                                                                   \
    SKIP_WITHOUT_CUDA();                                                                 \
    if (!cudnn_attention_built())                                                        \
      GTEST_SKIP() << "this build has no cuDNN attention (configured without the cuDNN " \
                      "frontend's headers: tools/fetch_cudnn_frontend.sh)";              \
  } while (false)

// Without attn_mask: cuDNN's attention takes no other mask than the causal one here.
std::vector<TensorCoreCase> cudnn_cases() {
  return {{"GptLike", 2, 4, 256, 256, 64, 64, "none", true},
          {"RaggedLengths", 2, 2, 37, 131, 64, 64, "none", false},
          {"CausalMoreKeys", 2, 2, 100, 150, 64, 64, "none", true},
          {"CausalMoreQueries", 1, 2, 150, 70, 64, 64, "none", true},
          {"WideHeads", 1, 2, 130, 130, 128, 128, "none", true},
          {"NarrowHeads", 2, 2, 64, 96, 32, 32, "none", false}};
}

class AttentionCudnn : public ::testing::TestWithParam<TensorCoreCase> {};

TEST_P(AttentionCudnn, MatchesTheCpu) {
  SKIP_WITHOUT_CUDNN_ATTENTION();
  const TensorCoreCase& c = GetParam();
  for (DType dtype : {kFloat16, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Problem problem = make_problem(c, dtype);
    const Outputs cpu = run_cpu(problem);
    const Outputs gpu = run_cuda(problem, cudnn_attention_kernels(), cudnn_attention_kernels());
    expect_matches(gpu, cpu, dtype);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, AttentionCudnn, ::testing::ValuesIn(cudnn_cases()),
                         [](const ::testing::TestParamInfo<TensorCoreCase>& info) {
                           return info.param.name;
                         });

TEST(AttentionCudnnExchange, EachBackwardTakesTheOthersLogsumexp) {
  SKIP_WITHOUT_CUDNN_ATTENTION();
  const TensorCoreCase c{"Exchange", 2, 2, 90, 110, 64, 64, "none", true};
  for (DType dtype : {kFloat16, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Problem problem = make_problem(c, dtype);
    const Outputs cpu = run_cpu(problem);
    {
      SCOPED_TRACE("cuDNN forward, CUDA-core backward");
      expect_matches(run_cuda(problem, cudnn_attention_kernels(), cuda_core_attention_kernels()),
                     cpu, dtype);
    }
    {
      SCOPED_TRACE("CUDA-core forward, cuDNN backward");
      expect_matches(run_cuda(problem, cuda_core_attention_kernels(), cudnn_attention_kernels()),
                     cpu, dtype);
    }
  }
}

TEST(AttentionCudnnDeterminism, TwoRunsGiveTheSameBits) {
  SKIP_WITHOUT_CUDNN_ATTENTION();
  const TensorCoreCase c{"Repeat", 2, 4, 200, 300, 64, 64, "none", false};
  for (DType dtype : {kFloat16, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Problem problem = make_problem(c, dtype);
    const Outputs first = run_cuda(problem, cudnn_attention_kernels(), cudnn_attention_kernels());
    const Outputs second = run_cuda(problem, cudnn_attention_kernels(), cudnn_attention_kernels());
    expect_same_bits(first, second);
  }
}

TEST(AttentionCudnnFit, OnlyTheSixteenBitDtypesWithoutDropoutOrMask) {
  SKIP_WITHOUT_CUDNN_ATTENTION();
  const TensorCoreCase c{"Fit", 1, 2, 10, 12, 64, 64, "none", false};
  const Problem problem = make_problem(c, kBFloat16);
  const Tensor query = problem.query.cuda();
  for (AttentionPass pass : {AttentionPass::Forward, AttentionPass::Backward}) {
    SCOPED_TRACE(pass == AttentionPass::Forward ? "forward" : "backward");
    EXPECT_TRUE(cudnn_attention_fits(problem.params, {&query}, pass));
    const Tensor query_float = query.to(kFloat32);
    EXPECT_FALSE(cudnn_attention_fits(problem.params, {&query_float}, pass));
    AttentionParams params = problem.params;
    params.dropout_p = 0.1;
    EXPECT_FALSE(cudnn_attention_fits(params, {&query}, pass));
    params = problem.params;
    params.mask = AttentionMask::Boolean;
    EXPECT_FALSE(cudnn_attention_fits(params, {&query}, pass));
    params = problem.params;
    params.head_dim = 12;
    EXPECT_FALSE(cudnn_attention_fits(params, {&query}, pass));
    params = problem.params;
    params.key_length = 0;
    EXPECT_FALSE(cudnn_attention_fits(params, {&query}, pass));
    // A view two elements in: 4-byte aligned, not 16.
    const Tensor shifted = query.view({-1}).slice(0, 2, query.numel());
    EXPECT_FALSE(cudnn_attention_fits(problem.params, {&query, &shifted}, pass));
  }
}

TEST(AttentionCudnnFit, TheEntryPointsRefuseWhatDoesNotFit) {
  SKIP_WITHOUT_CUDNN_ATTENTION();
  const TensorCoreCase c{"Refuse", 1, 1, 8, 8, 64, 64, "none", false};
  const Problem problem = make_problem(c, kFloat32);
  EXPECT_ERROR_CONTAINS(run_cuda(problem, cudnn_attention_kernels(), cudnn_attention_kernels()),
                        "scaled_dot_product_attention: cuDNN's forward expected float16 or "
                        "bfloat16, dropout_p 0, no attn_mask");
}

// Runs in a CUDA build without the frontend, GPU or not: the entry points touch no tensor.
TEST(AttentionCudnnBuild, ABuildWithoutTheFrontendSaysHowToGetIt) {
  if (cuda_core_attention_kernels().forward == nullptr)
    GTEST_SKIP() << "a CPU-only build has no CUDA attention at all";
  if (cudnn_attention_built()) GTEST_SKIP() << "this build has the cuDNN attention";
  const TensorCoreCase c{"Absent", 1, 1, 8, 8, 64, 64, "none", false};
  const Problem problem = make_problem(c, kBFloat16);
  Tensor out = empty({1, 1, 8, 64}, problem.query.options());
  Tensor logsumexp = empty({1, 1, 8}, problem.query.options().dtype(kFloat32));
  EXPECT_ERROR_CONTAINS(
      cudnn_attention_kernels().forward(out, logsumexp, problem.query, problem.key, problem.value,
                                        Tensor(), problem.params),
      "tools/fetch_cudnn_frontend.sh");
  EXPECT_FALSE(cudnn_attention_fits(problem.params, {&problem.query}, AttentionPass::Forward));
}

}  // namespace
}  // namespace minidl
