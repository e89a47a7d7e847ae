// conv2d on oneDNN (ops/cpu/onednn_conv.cpp) against minidl's im2col path and the float64
// results, over the case table of conv_test_cases.h, in float32 and bfloat16, NCHW and
// channels-last; its primitive cache; its thread shares; and the switch (ops/onednn.h).
//
// Tolerances. float32: the inputs are in [-1, 1] and a result sums at most K = 100 products
// (C_in / groups * kH * kW), so oneDNN's and im2col's sums, in different orders and with FMA,
// differ from the exact one by at most K * 2^-24 * (the largest partial sum, < 10) ~ 6e-5 in the
// worst case and ~1e-6 typically: 1e-5 relative and absolute, as the float32 tests of
// conv_test.cpp. The weight and bias gradients sum N * H_out * W_out products instead (up to
// 1300 here, summed in pieces of about 1024 by both paths): 10 times that. bfloat16: the exact
// result for the rounded inputs, rounded once to bfloat16 (2^-8 relative), plus float32
// accumulation: 8e-3.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "conv_test_cases.h"
#include "minidl/ops/conv.h"
#include "minidl/ops/onednn.h"
#include "onednn_test_util.h"
#include "test_util.h"

namespace minidl {
namespace {

using namespace conv_testing;
using testing::all_close;
using testing::process_thread_count;
using testing::ScopedOnednn;
using testing::ScopedThreadCount;

// The forward result and every gradient of one convolution.
struct Results {
  Tensor out, input_grad, weight_grad, bias_grad;
};

Results run(const ConvCase& c, DType dtype, bool channels_last) {
  Tensor input = make_input(c).to(dtype);
  if (channels_last) input = input.contiguous(MemoryFormat::ChannelsLast);
  input = input.detach().requires_grad_();
  Tensor weight = make_weight(c).to(dtype).requires_grad_();
  Tensor bias = c.with_bias ? make_bias(c).to(dtype).requires_grad_() : Tensor();
  Tensor out = conv2d(input, weight, bias, c.params.stride, c.params.padding, c.params.dilation,
                      c.params.groups);
  out.backward(wiggly(out.sizes(), 3.0).to(dtype));
  return {out.detach(), input.grad(), weight.grad(), bias.defined() ? bias.grad() : Tensor()};
}

// The table's cases, and one whose stride leaves the input's last row unread (oneDNN's far-side
// padding is then negative).
std::vector<ConvCase> cases() {
  std::vector<ConvCase> all = conv_cases();
  all.push_back({"stride_2_last_row_unread", {2, 3, 8, 8}, {4, 3, 3, 3}, true, {2, 0, 1, 1}});
  return all;
}

// `tolerance` for the output and the input gradient, `sum_tolerance` for the weight and bias
// gradients (sums over the batch and the positions).
::testing::AssertionResult all_results_close(const Results& actual, const Results& expected,
                                             double tolerance, double sum_tolerance) {
  struct Pair {
    const char* name;
    Tensor actual, expected;
    double tolerance;
  };
  const Pair pairs[] = {
      {"output", actual.out, expected.out, tolerance},
      {"input gradient", actual.input_grad, expected.input_grad, tolerance},
      {"weight gradient", actual.weight_grad, expected.weight_grad, sum_tolerance},
      {"bias gradient", actual.bias_grad, expected.bias_grad, sum_tolerance}};
  for (const Pair& pair : pairs) {
    if (!pair.expected.defined()) continue;
    const auto close = all_close(pair.actual, pair.expected, pair.tolerance, pair.tolerance);
    if (!close) return ::testing::AssertionFailure() << pair.name << ": " << close.message();
  }
  return ::testing::AssertionSuccess();
}

TEST(OnednnConv2d, IsOnByDefaultWhenAvailableAndCanBeSwitchedOff) {
  SKIP_WITHOUT_ONEDNN();
  const char* environment = std::getenv("MINIDL_ONEDNN");
  if (environment != nullptr && std::strcmp(environment, "0") == 0)
    GTEST_SKIP() << "MINIDL_ONEDNN=0 starts this process with oneDNN off";
  EXPECT_TRUE(onednn_enabled());
  {
    const ScopedOnednn off(false);
    EXPECT_FALSE(onednn_enabled());
  }
  EXPECT_TRUE(onednn_enabled());
}

TEST(OnednnConv2d, MatchesFloat64AndIm2colOnEveryCaseInFloat32) {
  SKIP_WITHOUT_ONEDNN();
  for (const ConvCase& c : cases()) {
    for (bool channels_last : {false, true}) {
      const Results exact = run(c, kFloat64, channels_last);  // float64 always runs im2col
      Results im2col, onednn;
      {
        const ScopedOnednn off(false);
        im2col = run(c, kFloat32, channels_last);
      }
      {
        const ScopedOnednn on(true);
        onednn = run(c, kFloat32, channels_last);
      }
      const char* layout = channels_last ? "channels-last" : "NCHW";
      EXPECT_TRUE(all_results_close(onednn, exact, 1e-5, 1e-4)) << c.name << ", " << layout;
      EXPECT_TRUE(all_results_close(onednn, im2col, 2e-5, 2e-4)) << c.name << ", " << layout;
      EXPECT_EQ(onednn.out.suggest_memory_format(), im2col.out.suggest_memory_format()) << c.name;
      EXPECT_EQ(onednn.input_grad.suggest_memory_format(),
                im2col.input_grad.suggest_memory_format())
          << c.name;
    }
  }
}

TEST(OnednnConv2d, MatchesFloat64OnEveryCaseInBFloat16) {
  SKIP_WITHOUT_ONEDNN();
  const ScopedOnednn on(true);
  for (const ConvCase& c : cases()) {
    for (bool channels_last : {false, true}) {
      // The exact results for the bfloat16-rounded inputs.
      const Results exact = [&] {
        Tensor input = make_input(c).to(kBFloat16).to(kFloat64);
        if (channels_last) input = input.contiguous(MemoryFormat::ChannelsLast);
        input = input.detach().requires_grad_();
        Tensor weight = make_weight(c).to(kBFloat16).to(kFloat64).requires_grad_();
        Tensor bias =
            c.with_bias ? make_bias(c).to(kBFloat16).to(kFloat64).requires_grad_() : Tensor();
        Tensor out = conv2d(input, weight, bias, c.params.stride, c.params.padding,
                            c.params.dilation, c.params.groups);
        out.backward(wiggly(out.sizes(), 3.0).to(kBFloat16).to(kFloat64));
        return Results{out.detach(), input.grad(), weight.grad(),
                       bias.defined() ? bias.grad() : Tensor()};
      }();
      const Results bf16 = run(c, kBFloat16, channels_last);
      EXPECT_EQ(bf16.out.dtype(), kBFloat16);
      EXPECT_EQ(bf16.weight_grad.dtype(), kBFloat16);
      EXPECT_TRUE(all_results_close(bf16, exact, 8e-3, 8e-3))
          << c.name << (channels_last ? ", channels-last" : ", NCHW");
    }
  }
}

TEST(OnednnConv2d, ATrainingStepAfterTheFirstMakesNoPrimitive) {
  SKIP_WITHOUT_ONEDNN();
  const ScopedOnednn on(true);
  const ConvCase c = {"step", {8, 16, 12, 12}, {16, 16, 3, 3}, true, {1, 1, 1, 1}};
  run(c, kFloat32, false);
  const int64_t after_first = onednn_primitives_created();
  EXPECT_GT(after_first, 0);
  for (int step = 0; step < 3; ++step) run(c, kFloat32, false);
  EXPECT_EQ(onednn_primitives_created(), after_first);
  // A new geometry makes its own.
  run({"other", {8, 16, 12, 12}, {8, 16, 3, 3}, true, {2, 1, 1, 1}}, kFloat32, false);
  EXPECT_GT(onednn_primitives_created(), after_first);
}

TEST(OnednnConv2d, SwitchedOffMakesNoPrimitive) {
  SKIP_WITHOUT_ONEDNN();
  const ScopedOnednn off(false);
  const int64_t before = onednn_primitives_created();
  run({"unseen", {3, 5, 9, 9}, {7, 5, 3, 3}, true, {1, 1, 1, 1}}, kFloat32, false);
  EXPECT_EQ(onednn_primitives_created(), before);
}

TEST(OnednnConv2d, SharesOfTheBatchRepeatExactlyForEachThreadCount) {
  SKIP_WITHOUT_ONEDNN();
  const ScopedOnednn on(true);
  // 13 samples: uneven shares for 2 and 3 threads (two share sizes, two primitives).
  const ConvCase c = {"shares", {13, 16, 10, 10}, {8, 16, 3, 3}, true, {1, 1, 1, 1}};
  const Results exact = run(c, kFloat64, false);
  for (int threads : {1, 2, 3}) {
    const ScopedThreadCount thread_count(threads);
    const Results first = run(c, kFloat32, false), second = run(c, kFloat32, false);
    EXPECT_TRUE(all_results_close(first, exact, 1e-5, 1e-4)) << "threads " << threads;
    EXPECT_TRUE(all_results_close(second, first, 0.0, 0.0)) << "threads " << threads;
  }
}

TEST(OnednnConv2d, BFloat16WeightGradientsAreTheSameForEveryThreadCount) {
  SKIP_WITHOUT_ONEDNN();
  if (!onednn_bfloat16_instructions())
    GTEST_SKIP() << "this CPU has no AVX-512 BF16 instructions: bfloat16 weight gradients stay on "
                    "im2col";
  const ScopedOnednn on(true);
  // 21 samples: chunks of 8, 8 and 5, run by 1, 2 or 3 threads; sums over the batch (the weight
  // and bias gradients) must not depend on which thread summed which chunk.
  const ConvCase c = {"chunks", {21, 16, 10, 10}, {8, 16, 3, 3}, true, {1, 1, 1, 1}};
  Results one_thread;
  {
    const ScopedThreadCount thread_count(1);
    one_thread = run(c, kBFloat16, true);
  }
  // The weight's gradient is oneDNN's: a backward pass that needs it makes more primitives than
  // one that needs the input's alone (new geometries each, so that nothing is cached yet).
  const auto primitives_of_backward = [](int64_t size, bool weight_grad) {
    const ConvCase fresh = {"fresh", {4, 16, size, size}, {8, 16, 3, 3}, false, {1, 1, 1, 1}};
    Tensor x = make_input(fresh).to(kBFloat16).requires_grad_();
    Tensor w = make_weight(fresh).to(kBFloat16);
    if (weight_grad) w.requires_grad_();
    const int64_t made_before = onednn_primitives_created();
    conv2d(x, w, Tensor(), 1, 1).sum().backward();
    return onednn_primitives_created() - made_before;
  };
  EXPECT_GT(primitives_of_backward(11, true), primitives_of_backward(12, false));
  for (int threads : {2, 3}) {
    const ScopedThreadCount thread_count(threads);
    EXPECT_TRUE(all_results_close(run(c, kBFloat16, true), one_thread, 0.0, 0.0))
        << "threads " << threads;
  }
}

TEST(OnednnConv2d, StartsNoThreadsBesideMinidls) {
  SKIP_WITHOUT_ONEDNN();
  const ScopedOnednn on(true);
  const ScopedThreadCount threads(2);
  const ConvCase c = {"threads", {8, 24, 10, 10}, {16, 24, 3, 3}, true, {1, 1, 1, 1}};
  {
    const ScopedOnednn off(false);
    run(c, kFloat32, false);  // minidl's own threads are running now
  }
  const int64_t before = process_thread_count();
  const int64_t primitives = onednn_primitives_created();
  run(c, kFloat32, false);
  run(c, kFloat32, true);
  EXPECT_GT(onednn_primitives_created(), primitives);  // oneDNN did run
  EXPECT_EQ(process_thread_count(), before);  // and libgomp started no thread pool of its own
}

}  // namespace
}  // namespace minidl
