// Autocast (core/autocast.h, ops/autocast_policy.h) on the CPU, where 16-bit floats are
// converted in software: the policy op by op under both 16-bit types, the guard's scoping, the
// float32 gradients of float32 leaves, and the weight cache.
#include "minidl/core/autocast.h"

#include <optional>
#include <thread>
#include <vector>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/autograd/node.h"
#include "minidl/ops/attention.h"
#include "minidl/ops/autocast_policy.h"
#include "minidl/ops/conv.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/linalg.h"
#include "minidl/ops/loss.h"
#include "minidl/ops/norm.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::wiggly;

// A float32 parameter: a leaf that requires grad.
Tensor parameter(const Shape& sizes, double phase) {
  return wiggly(sizes, phase).mul(0.3).requires_grad_();
}

class AutocastPolicy : public ::testing::TestWithParam<DType> {};

TEST_P(AutocastPolicy, ProductsRunInTheAutocastDtype) {
  const DType low = GetParam();
  const Tensor image = wiggly({2, 3, 6, 6}, 0.1), weight = parameter({4, 3, 3, 3}, 0.2);
  const Tensor bias = parameter({4}, 0.3), x = wiggly({5, 7}, 0.4);
  const Tensor linear_weight = parameter({2, 7}, 0.5), linear_bias = parameter({2}, 0.6);
  amp::AutocastGuard autocast(low);
  EXPECT_EQ(conv2d(image, weight, bias, 1, 1).dtype(), low);
  EXPECT_EQ(linear(x, linear_weight, linear_bias).dtype(), low);
  EXPECT_EQ(matmul(x, wiggly({7, 3}, 0.7)).dtype(), low);
  EXPECT_EQ(matmul(wiggly({7}, 0.8), wiggly({7}, 0.9)).dtype(), low);
  // A float64 input is never cast (gradient checks stay exact).
  EXPECT_EQ(matmul(x.to(kFloat64), wiggly({7, 3}, 0.7, kFloat64)).dtype(), kFloat64);
}

TEST_P(AutocastPolicy, ScaledDotProductAttentionRunsInTheLowDtype) {
  const DType low = GetParam();
  const Tensor q = wiggly({1, 2, 3, 4}, 0.1), k = wiggly({1, 2, 5, 4}, 0.2),
               v = wiggly({1, 2, 5, 4}, 0.3);
  const Tensor boolean_mask = ones({3, 5}, kBool), additive_mask = zeros({3, 5});
  Tensor expected;
  {
    amp::AutocastGuard autocast(low);
    EXPECT_EQ(scaled_dot_product_attention(q, k, v).dtype(), low);
    EXPECT_EQ(scaled_dot_product_attention(q, k, v, boolean_mask).dtype(), low);
    // A float32 additive mask is cast with the operands (it would otherwise mismatch them).
    expected = scaled_dot_product_attention(q, k, v, additive_mask);
    EXPECT_EQ(expected.dtype(), low);
    EXPECT_EQ(scaled_dot_product_attention(q.to(kFloat64), k.to(kFloat64), v.to(kFloat64)).dtype(),
              kFloat64);
  }
  EXPECT_TRUE(testing::bitwise_equal(
      expected, scaled_dot_product_attention(q.to(low), k.to(low), v.to(low))));
}

TEST_P(AutocastPolicy, SoftmaxLossesAndReductionsRunInFloat32) {
  const DType low = GetParam();
  amp::AutocastGuard autocast(low);
  // Low-precision inputs, as a product under autocast makes them.
  const Tensor logits = linear(wiggly({4, 5}, 0.1), parameter({3, 5}, 0.2));
  ASSERT_EQ(logits.dtype(), low);
  const Tensor target = tensor(std::vector<int64_t>{0, 2, 1, 2});
  EXPECT_EQ(softmax(logits, 1).dtype(), kFloat32);
  EXPECT_EQ(log_softmax(logits, 1).dtype(), kFloat32);
  EXPECT_EQ(cross_entropy(logits, target).dtype(), kFloat32);
  EXPECT_EQ(nll_loss(log_softmax(logits, 1), target).dtype(), kFloat32);
  EXPECT_EQ(mse_loss(logits, wiggly({4, 3}, 0.3).to(low)).dtype(), kFloat32);
  EXPECT_EQ(mse_loss(logits, wiggly({4, 3}, 0.3)).dtype(), kFloat32);  // mixed: both cast up
  EXPECT_EQ(sum(logits).dtype(), kFloat32);
  EXPECT_EQ(sum(logits, {1}).dtype(), kFloat32);
  EXPECT_EQ(mean(logits).dtype(), kFloat32);
  EXPECT_EQ(mean(logits, {0}, true).dtype(), kFloat32);
  EXPECT_EQ(var(logits).dtype(), kFloat32);
  EXPECT_EQ(logits.sum().dtype(), kFloat32);  // the Tensor method goes through the same op

  // The float32 ops give what they give on float32 inputs outside autocast.
  Tensor expected;
  {
    amp::NoAutocastGuard off;
    expected = softmax(logits.to(kFloat32), 1);
  }
  EXPECT_TRUE(all_close(softmax(logits, 1), expected, 0, 0));
}

// What one batch_norm gives: its output, running statistics and gradients.
struct BatchNormRun {
  Tensor y, running_mean, running_var, grad_input, grad_weight, grad_bias;
};

// batch_norm in training on `x` (a leaf made here) with float32 parameters and statistics,
// under `autocast` (none: autocast off), then backward from `grad_output` (x's dtype).
BatchNormRun batch_norm_run(const Tensor& x_values, const Tensor& grad_output,
                            std::optional<DType> autocast) {
  const Tensor x = x_values.detach().requires_grad_();
  Tensor weight = parameter({4}, 0.6).add(1.0).detach().requires_grad_();
  Tensor bias = parameter({4}, 0.7);
  Tensor running_mean = wiggly({4}, 0.8), running_var = wiggly({4}, 0.9).add(2.0);
  Tensor y;
  {
    amp::AutocastGuard guard(autocast.value_or(kBFloat16), autocast.has_value());
    y = batch_norm(x, running_mean, running_var, weight, bias, /*training=*/true);
  }
  y.backward(grad_output);
  return {y, running_mean, running_var, x.grad(), weight.grad(), bias.grad()};
}

TEST_P(AutocastPolicy, BatchNormRunsInItsInputsDtypeWithFloat32StatisticsAndParameters) {
  const DType low = GetParam();
  // A 16-bit activation, as a convolution under autocast hands it to batch norm.
  Tensor x;
  {
    amp::AutocastGuard autocast(low);
    x = conv2d(wiggly({4, 3, 6, 6}, 0.4), parameter({4, 3, 3, 3}, 0.5), Tensor(), 1, 1).detach();
  }
  ASSERT_EQ(x.dtype(), low);
  const Tensor grad_output = wiggly({4, 4, 6, 6}, 1.1, low);

  const BatchNormRun autocast = batch_norm_run(x, grad_output, low);
  // The reference: the same (rounded) values in float32, outside autocast.
  const BatchNormRun reference = batch_norm_run(x.to(kFloat32), grad_output.to(kFloat32), {});

  EXPECT_EQ(autocast.y.dtype(), low);
  EXPECT_EQ(autocast.grad_input.dtype(), low);
  for (const Tensor* t :
       {&autocast.running_mean, &autocast.running_var, &autocast.grad_weight, &autocast.grad_bias})
    EXPECT_EQ(t->dtype(), kFloat32);
  // The output is rounded once to 16 bits (bfloat16: 8 significant bits, float16: 11).
  const double rounding = low == kBFloat16 ? 1.0 / 128 : 1.0 / 1024;
  EXPECT_TRUE(all_close(autocast.y, reference.y, rounding, rounding));
  EXPECT_TRUE(all_close(autocast.grad_input, reference.grad_input, 2 * rounding, 2 * rounding));
  // Statistics and parameter gradients are float32 sums of the same values either way.
  EXPECT_TRUE(all_close(autocast.running_mean, reference.running_mean, 1e-6, 1e-5));
  EXPECT_TRUE(all_close(autocast.running_var, reference.running_var, 1e-6, 1e-5));
  EXPECT_TRUE(all_close(autocast.grad_weight, reference.grad_weight, 1e-5, 1e-4));
  EXPECT_TRUE(all_close(autocast.grad_bias, reference.grad_bias, 1e-5, 1e-4));

  // Evaluation too, and the ReLU after it stays 16-bit (nothing casts it back and forth).
  amp::AutocastGuard autocast_on(low);
  const Tensor evaluated =
      batch_norm(x, reference.running_mean, reference.running_var, Tensor(), Tensor(), false);
  EXPECT_EQ(evaluated.dtype(), low);
  EXPECT_EQ(relu(evaluated).dtype(), low);
  // A float32 input stays float32 (batch_norm is outside the policy, in neither direction).
  EXPECT_EQ(batch_norm(x.to(kFloat32), Tensor(), Tensor(), Tensor(), Tensor(), true).dtype(),
            kFloat32);
}

// On the CPU a convolution's cast keeps the input's layout (PyTorch's to() preserves it), so a
// channels-last model stays channels-last under autocast (and oneDNN takes it without reorders).
TEST_P(AutocastPolicy, AChannelsLastConvolutionStaysChannelsLastOnTheCpu) {
  const DType low = GetParam();
  const Tensor weight = parameter({4, 3, 3, 3}, 0.2);
  const Tensor image = wiggly({2, 3, 6, 6}, 0.1);
  amp::AutocastGuard autocast(low);
  const Tensor nhwc = conv2d(image.contiguous(MemoryFormat::ChannelsLast), weight, Tensor(), 1, 1);
  EXPECT_EQ(nhwc.dtype(), low);
  EXPECT_TRUE(nhwc.is_contiguous(MemoryFormat::ChannelsLast));
  const Tensor nchw = conv2d(image, weight, Tensor(), 1, 1);
  EXPECT_TRUE(nchw.is_contiguous());
  // The same sums, maybe in another order: a unit in the last place of 16 bits apart at most.
  EXPECT_TRUE(all_close(nhwc.to(kFloat32), nchw.to(kFloat32), 1.0 / 128, 1.0 / 128));
}

TEST_P(AutocastPolicy, OpsOutsideThePolicyKeepTheirInputsDtype) {
  const DType low = GetParam();
  amp::AutocastGuard autocast(low);
  const Tensor x = wiggly({3, 4}, 0.1);
  EXPECT_EQ(relu(x).dtype(), kFloat32);
  EXPECT_EQ(max(x).dtype(), kFloat32);
  EXPECT_EQ(relu(x.to(low)).dtype(), low);
  // Class targets (int64) pass through a float32 op untouched.
  const Tensor target = tensor(std::vector<int64_t>{1, 0, 3});
  EXPECT_EQ(cross_entropy(x, target).dtype(), kFloat32);
}

INSTANTIATE_TEST_SUITE_P(Float16AndBFloat16, AutocastPolicy, ::testing::Values(kFloat16, kBFloat16),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return info.param == kFloat16 ? "Float16" : "BFloat16";
                         });

TEST(AutocastPolicyTable, ProductsAreLowPrecisionTheRestFloat32) {
  using amp::AutocastOp;
  using amp::CastPolicy;
  for (AutocastOp op : {AutocastOp::Conv2d, AutocastOp::Linear, AutocastOp::Matmul,
                        AutocastOp::ScaledDotProductAttention, AutocastOp::ConvTranspose2d})
    EXPECT_EQ(amp::cast_policy(op), CastPolicy::LowerPrecision) << amp::autocast_op_name(op);
  for (AutocastOp op : {AutocastOp::Softmax, AutocastOp::LogSoftmax, AutocastOp::CrossEntropy,
                        AutocastOp::NllLoss, AutocastOp::MseLoss, AutocastOp::Sum, AutocastOp::Mean,
                        AutocastOp::Var, AutocastOp::LayerNorm, AutocastOp::GroupNorm})
    EXPECT_EQ(amp::cast_policy(op), CastPolicy::Float32) << amp::autocast_op_name(op);
  EXPECT_EQ(amp::autocast_op_name(AutocastOp::CrossEntropy), "cross_entropy");
}

TEST(AutocastGuard, OutsideAnyGuardNothingChanges) {
  EXPECT_FALSE(amp::is_autocast_enabled());
  const Tensor x = wiggly({3, 4}, 0.1), weight = parameter({2, 4}, 0.2);
  EXPECT_EQ(linear(x, weight).dtype(), kFloat32);
  EXPECT_EQ(sum(x.to(kBFloat16)).dtype(), kBFloat16);
  EXPECT_EQ(softmax(x.to(kFloat16), 1).dtype(), kFloat16);
  // And the numbers are exactly the plain float32 ones after a guard has come and gone.
  const Tensor before = linear(x, weight);
  { amp::AutocastGuard autocast(kBFloat16); }
  EXPECT_TRUE(all_close(linear(x, weight), before, 0, 0));
}

TEST(AutocastGuard, NestedGuardsRestoreTheOuterState) {
  const Tensor x = wiggly({3, 4}, 0.1), weight = parameter({2, 4}, 0.2);
  {
    amp::AutocastGuard outer(kBFloat16);
    EXPECT_TRUE(amp::is_autocast_enabled());
    EXPECT_EQ(linear(x, weight).dtype(), kBFloat16);
    {
      amp::AutocastGuard inner(kFloat16);
      EXPECT_EQ(amp::autocast_dtype(), kFloat16);
      EXPECT_EQ(linear(x, weight).dtype(), kFloat16);
    }
    EXPECT_EQ(amp::autocast_dtype(), kBFloat16);
    EXPECT_EQ(linear(x, weight).dtype(), kBFloat16);
    {
      amp::AutocastGuard off(kBFloat16, /*enabled=*/false);
      EXPECT_FALSE(amp::is_autocast_enabled());
      EXPECT_EQ(linear(x, weight).dtype(), kFloat32);
    }
    EXPECT_TRUE(amp::is_autocast_enabled());
    EXPECT_EQ(linear(x, weight).dtype(), kBFloat16);
  }
  EXPECT_FALSE(amp::is_autocast_enabled());
  EXPECT_EQ(linear(x, weight).dtype(), kFloat32);
}

TEST(AutocastGuard, ADisabledGuardChangesNothing) {
  const Tensor x = wiggly({3, 4}, 0.1), weight = parameter({2, 4}, 0.2);
  const Tensor expected = linear(x, weight);
  amp::AutocastGuard autocast(kFloat16, /*enabled=*/false);
  EXPECT_FALSE(amp::is_autocast_enabled());
  const Tensor out = linear(x, weight);
  EXPECT_EQ(out.dtype(), kFloat32);
  EXPECT_TRUE(all_close(out, expected, 0, 0));
  EXPECT_EQ(amp::cast_cache_size(), 0u);
}

TEST(AutocastGuard, RejectsANon16BitDtype) {
  EXPECT_ERROR_CONTAINS(amp::AutocastGuard(kFloat32), "expected kFloat16 or kBFloat16");
}

TEST(AutocastGuard, StateIsPerThread) {
  amp::AutocastGuard autocast(kBFloat16);
  bool enabled_elsewhere = true;
  std::thread([&] { enabled_elsewhere = amp::is_autocast_enabled(); }).join();
  EXPECT_FALSE(enabled_elsewhere);
  EXPECT_TRUE(amp::is_autocast_enabled());
}

// A small conv -> linear -> cross_entropy network; returns the gradients of its four float32
// parameters, computed under `autocast` (or in float32 when not given).
std::vector<Tensor> network_gradients(std::optional<DType> autocast, bool backward_inside) {
  Tensor conv_weight = parameter({3, 2, 3, 3}, 0.1), conv_bias = parameter({3}, 0.2);
  Tensor fc_weight = parameter({4, 3 * 4 * 4}, 0.3), fc_bias = parameter({4}, 0.4);
  const Tensor image = wiggly({5, 2, 6, 6}, 0.5);
  const Tensor target = tensor(std::vector<int64_t>{0, 3, 1, 2, 3});
  Tensor loss;
  {
    amp::AutocastGuard guard(autocast.value_or(kBFloat16), autocast.has_value());
    Tensor hidden = relu(conv2d(image, conv_weight, conv_bias));
    loss = cross_entropy(linear(hidden.flatten(1), fc_weight, fc_bias), target);
    EXPECT_EQ(loss.dtype(), kFloat32);
    if (backward_inside) loss.backward();
  }
  if (!backward_inside) loss.backward();
  return {conv_weight.grad(), conv_bias.grad(), fc_weight.grad(), fc_bias.grad()};
}

TEST_P(AutocastPolicy, Float32LeavesGetFloat32GradientsCloseToFloat32Training) {
  const DType low = GetParam();
  const std::vector<Tensor> reference = network_gradients(std::nullopt, false);
  // bfloat16 keeps 8 significant bits, float16 11: relative errors near 2^-8 and 2^-11 per
  // rounding, a few roundings deep.
  const double tolerance = low == kBFloat16 ? 4e-2 : 6e-3;
  for (bool backward_inside : {false, true}) {
    const std::vector<Tensor> grads = network_gradients(low, backward_inside);
    for (size_t i = 0; i < grads.size(); ++i) {
      ASSERT_TRUE(grads[i].defined()) << "parameter " << i;
      EXPECT_EQ(grads[i].dtype(), kFloat32) << "parameter " << i;
      const double largest = reference[i].abs().max().item<float>();
      EXPECT_TRUE(all_close(grads[i], reference[i], tolerance * largest, tolerance))
          << "parameter " << i << ", backward " << (backward_inside ? "inside" : "outside")
          << " the guard";
    }
  }
}

TEST(AutocastWeightCache, AParameterIsCastOncePerGuard) {
  const Tensor x = wiggly({3, 4}, 0.1);
  Tensor weight = parameter({2, 4}, 0.2), bias = parameter({2}, 0.3);
  amp::AutocastGuard autocast(kFloat16);
  const Tensor first = linear(x, weight, bias), second = linear(x.mul(2.0), weight, bias);
  EXPECT_EQ(amp::cast_cache_size(), 2u);  // the weight and the bias
  // Both products hang off the same cast node: the weight was converted once.
  ASSERT_NE(first.grad_fn(), nullptr);
  ASSERT_NE(second.grad_fn(), nullptr);
  EXPECT_EQ(first.grad_fn()->next[1].node, second.grad_fn()->next[1].node);
  EXPECT_EQ(first.grad_fn()->next[1].node->name(), "ToCopyBackward");
  EXPECT_TRUE(amp::cached_cast(weight, kFloat16).is_same(amp::cached_cast(weight, kFloat16)));
  // Inputs that are not parameters are not cached.
  EXPECT_EQ(amp::cast_cache_size(), 2u);
}

TEST(AutocastWeightCache, AVersionChangeInvalidatesTheEntry) {
  Tensor weight = parameter({2, 4}, 0.2);
  amp::AutocastGuard autocast(kBFloat16);
  const Tensor before = amp::cached_cast(weight, kBFloat16);
  {
    NoGradGuard no_grad;
    weight.mul_(2.0);  // as an optimizer step does: bumps the version
  }
  const Tensor after = amp::cached_cast(weight, kBFloat16);
  EXPECT_FALSE(after.is_same(before));
  EXPECT_TRUE(all_close(after, before.mul(2.0), 0, 0));
  EXPECT_TRUE(after.is_same(amp::cached_cast(weight, kBFloat16)));
}

TEST(AutocastWeightCache, EmptiesWhenTheOutermostGuardExits) {
  Tensor weight = parameter({2, 4}, 0.2);
  {
    amp::AutocastGuard outer(kBFloat16);
    {
      amp::AutocastGuard inner(kFloat16);
      amp::cached_cast(weight, kFloat16);
    }
    EXPECT_EQ(amp::cast_cache_size(), 1u);  // still inside the outermost guard
  }
  EXPECT_EQ(amp::cast_cache_size(), 0u);
}

TEST(AutocastWeightCache, TwoBackwardsInOneRegionAccumulate) {
  // Gradient accumulation inside one guard: the first backward frees the cast's node, so the
  // second forward must cast again rather than reuse a released graph.
  const Tensor x = wiggly({3, 4}, 0.1);
  Tensor weight = parameter({2, 4}, 0.2);
  Tensor single_grad;
  {
    amp::AutocastGuard autocast(kBFloat16);
    sum(linear(x, weight)).backward();
    single_grad = weight.grad().clone();
    sum(linear(x, weight)).backward();
  }
  EXPECT_TRUE(all_close(weight.grad(), single_grad.mul(2.0), 0, 0));
}

TEST(AutocastWeightCache, ACastWithoutGraphIsNotReusedWithGrad) {
  const Tensor x = wiggly({3, 4}, 0.1);
  Tensor weight = parameter({2, 4}, 0.2);
  amp::AutocastGuard autocast(kBFloat16);
  {
    NoGradGuard no_grad;
    EXPECT_FALSE(linear(x, weight).requires_grad());
  }
  const Tensor out = linear(x, weight);
  EXPECT_TRUE(out.requires_grad());
  sum(out).backward();
  EXPECT_TRUE(weight.grad().defined());
}

}  // namespace
}  // namespace minidl
