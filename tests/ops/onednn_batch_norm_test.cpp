// batch_norm in training on oneDNN (ops/cpu/onednn_batch_norm.cpp), which takes channels-last
// input in float32 (and bfloat16 on CPUs with AVX-512 BF16): against float64 and against minidl's
// own kernels (oneDNN switched off), with and without the affine parameters; what stays on
// minidl's kernels (NCHW, evaluation, other dtypes); the primitive cache; thread counts; and the
// threads oneDNN starts.
//
// Tolerances. Both paths sum M = N * H * W float32 values per channel (for the mean, the
// variance and the gradients of the weight and bias) in different orders. A float32 sum's error
// grows with M and with its terms' magnitudes, not with the sum's: the bias gradient adds M
// terms of about 0.6 to a result below 1, so it is the least accurate result. The worst case
// is M * 2^-24 * 0.6 * M: 1e-2 for M = 525, the largest of the five cases, and 10 for the large
// case (M = 16384); in practice rounding errors cancel and the largest errors seen against
// float64 were 2.3e-6 and 3.1e-5, both in a bias gradient. Allowed: 1e-5 and 1e-4, relative and
// absolute.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "minidl/ops/norm.h"
#include "minidl/ops/onednn.h"
#include "onednn_test_util.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::process_thread_count;
using testing::ScopedOnednn;
using testing::ScopedThreadCount;

struct NormCase {
  std::string name;
  Shape sizes;  // [N, C, H, W]
  bool with_weight, with_bias;
};

std::vector<NormCase> cases() {
  return {{"resnet_like", {8, 16, 8, 8}, true, true},
          {"odd_sizes", {5, 24, 3, 7}, true, true},
          {"weight_only", {2, 64, 4, 4}, true, false},
          {"bias_only", {4, 8, 5, 5}, false, true},
          {"no_affine", {6, 32, 2, 2}, false, false}};
}

// The output, the updated running statistics and every gradient of one training step.
struct Results {
  Tensor out, running_mean, running_var, input_grad, weight_grad, bias_grad;
};

Results run(const NormCase& c, DType dtype, MemoryFormat format = MemoryFormat::ChannelsLast,
            bool training = true) {
  const int64_t channels = c.sizes[1];
  Tensor input = testing::wiggly(c.sizes, dtype, {.amplitude = 2.0, .offset = 0.5})
                     .contiguous(format)
                     .requires_grad_();
  Tensor weight =
      c.with_weight
          ? testing::wiggly({channels}, dtype, {.phase = 2.0, .offset = 1.0}).requires_grad_()
          : Tensor();
  Tensor bias =
      c.with_bias ? testing::wiggly({channels}, dtype, {.phase = 4.0}).requires_grad_() : Tensor();
  Results r{Tensor(), testing::wiggly({channels}, dtype, {.phase = 1.0}),
            testing::wiggly({channels}, dtype, {.phase = 3.0, .offset = 2.0})};
  r.out = batch_norm(input, r.running_mean, r.running_var, weight, bias, training, 0.1, 1e-5);
  r.out.backward(testing::wiggly(c.sizes, dtype, {.phase = 5.0}).contiguous(format));
  r.out = r.out.detach();
  r.input_grad = input.grad();
  if (weight.defined()) r.weight_grad = weight.grad();
  if (bias.defined()) r.bias_grad = bias.grad();
  return r;
}

::testing::AssertionResult all_results_close(const Results& actual, const Results& expected,
                                             double tolerance) {
  const std::pair<const char*, std::pair<Tensor, Tensor>> pairs[] = {
      {"output", {actual.out, expected.out}},
      {"running mean", {actual.running_mean, expected.running_mean}},
      {"running variance", {actual.running_var, expected.running_var}},
      {"input gradient", {actual.input_grad, expected.input_grad}},
      {"weight gradient", {actual.weight_grad, expected.weight_grad}},
      {"bias gradient", {actual.bias_grad, expected.bias_grad}}};
  for (const auto& [name, tensors] : pairs) {
    if (!tensors.second.defined()) continue;
    const auto close = all_close(tensors.first, tensors.second, tolerance, tolerance);
    if (!close) return ::testing::AssertionFailure() << name << ": " << close.message();
  }
  return ::testing::AssertionSuccess();
}

TEST(OnednnBatchNorm, MatchesFloat64AndMinidlsKernelsInChannelsLast) {
  SKIP_WITHOUT_ONEDNN();
  for (const NormCase& c : cases()) {
    const Results exact = run(c, kFloat64);  // float64 always runs minidl's kernels
    Results minidl, onednn;
    {
      const ScopedOnednn off(false);
      minidl = run(c, kFloat32);
    }
    const int64_t before = onednn_primitives_created();
    {
      const ScopedOnednn on(true);
      onednn = run(c, kFloat32);
    }
    EXPECT_GT(onednn_primitives_created(), before) << c.name << ": oneDNN did not take it";
    EXPECT_TRUE(all_results_close(onednn, exact, 1e-5)) << c.name;
    EXPECT_TRUE(all_results_close(onednn, minidl, 1e-5)) << c.name;
    EXPECT_EQ(onednn.out.suggest_memory_format(), MemoryFormat::ChannelsLast) << c.name;
    EXPECT_EQ(onednn.input_grad.suggest_memory_format(), MemoryFormat::ChannelsLast) << c.name;
  }
}

TEST(OnednnBatchNorm, ALargeBatchStaysWithinFloat32Accuracy) {
  SKIP_WITHOUT_ONEDNN();
  const ScopedOnednn on(true);
  const NormCase c = {"large", {64, 32, 16, 16}, true, true};
  EXPECT_TRUE(all_results_close(run(c, kFloat32), run(c, kFloat64), 1e-4));
}

TEST(OnednnBatchNorm, NchwEvaluationAndOtherDtypesStayOnMinidlsKernels) {
  SKIP_WITHOUT_ONEDNN();
  const NormCase c = {"unseen", {3, 40, 6, 6}, true, true};
  const auto compare = [&](const char* what, DType dtype, MemoryFormat format, bool training) {
    Results off;
    {
      const ScopedOnednn switched_off(false);
      off = run(c, dtype, format, training);
    }
    const ScopedOnednn on(true);
    const int64_t before = onednn_primitives_created();
    const Results on_results = run(c, dtype, format, training);
    EXPECT_EQ(onednn_primitives_created(), before) << what;
    EXPECT_TRUE(all_results_close(on_results, off, 0.0)) << what;
  };
  compare("NCHW", kFloat32, MemoryFormat::Contiguous, true);
  compare("evaluation", kFloat32, MemoryFormat::ChannelsLast, false);
  compare("bfloat16 NCHW", kBFloat16, MemoryFormat::Contiguous, true);
  compare("float64", kFloat64, MemoryFormat::ChannelsLast, true);
  if (!onednn_bfloat16_instructions())
    compare("bfloat16 without bfloat16 instructions", kBFloat16, MemoryFormat::ChannelsLast, true);
}

// bfloat16 results are rounded to bfloat16 (2^-8 relative) by both paths, after float32 sums in
// different orders: they may differ by a unit in the last place, 2^-7 relative.
TEST(OnednnBatchNorm, BFloat16ChannelsLastMatchesMinidlsKernelsOnCpusWithBFloat16) {
  SKIP_WITHOUT_ONEDNN();
  if (!onednn_bfloat16_instructions())
    GTEST_SKIP() << "this CPU has no AVX-512 BF16 instructions: bfloat16 stays on minidl's kernels";
  int64_t made = 0;
  for (const NormCase& c : cases()) {
    Results off;
    {
      const ScopedOnednn switched_off(false);
      off = run(c, kBFloat16);
    }
    const ScopedOnednn on(true);
    const int64_t before = onednn_primitives_created();
    const Results on_results = run(c, kBFloat16);
    made += onednn_primitives_created() - before;
    EXPECT_EQ(on_results.out.dtype(), kBFloat16) << c.name;
    EXPECT_TRUE(on_results.out.is_contiguous(MemoryFormat::ChannelsLast)) << c.name;
    EXPECT_TRUE(all_results_close(on_results, off, 1.0 / 128)) << c.name;
  }
  EXPECT_GT(made, 0);  // oneDNN took some of them (one whose channels it has no kernel for, not)
}

TEST(OnednnBatchNorm, ATrainingStepAfterTheFirstMakesNoPrimitive) {
  SKIP_WITHOUT_ONEDNN();
  const ScopedOnednn on(true);
  const NormCase c = {"step", {8, 48, 6, 6}, true, true};
  run(c, kFloat32);
  const int64_t after_first = onednn_primitives_created();
  for (int step = 0; step < 3; ++step) run(c, kFloat32);
  EXPECT_EQ(onednn_primitives_created(), after_first);
}

TEST(OnednnBatchNorm, RepeatsExactlyForEachThreadCount) {
  SKIP_WITHOUT_ONEDNN();
  const ScopedOnednn on(true);
  const NormCase c = {"threads", {13, 16, 5, 5}, true, true};
  const Results first = run(c, kFloat32);
  for (int threads : {1, 2, 3}) {
    const ScopedThreadCount thread_count(threads);
    EXPECT_TRUE(all_results_close(run(c, kFloat32), first, 0.0)) << "threads " << threads;
  }
}

TEST(OnednnBatchNorm, StartsNoThreadsBesideMinidls) {
  SKIP_WITHOUT_ONEDNN();
  const ScopedThreadCount threads(2);
  const NormCase c = {"thread_count", {8, 56, 4, 4}, true, true};
  {
    const ScopedOnednn off(false);
    run(c, kFloat32);  // minidl's own threads are running now
  }
  const ScopedOnednn on(true);
  const int64_t before = process_thread_count();
  const int64_t primitives = onednn_primitives_created();
  run(c, kFloat32);
  EXPECT_GT(onednn_primitives_created(), primitives);  // oneDNN did run
  EXPECT_EQ(process_thread_count(), before);  // and libgomp started no thread pool of its own
}

}  // namespace
}  // namespace minidl
