// SGD on the CPU: three steps of each variant (plain, momentum, dampening, weight decay,
// Nesterov, momentum with weight decay) against values worked out by hand from
// torch.optim.SGD's rule; parameter groups with their own options; dtypes and layouts;
// autograd interplay (versions, no graph); and the errors for invalid options and parameters.
#include "minidl/optim/sgd.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl::optim {
namespace {

using testing::all_close;

// The gradients of the three steps below, for a two-element parameter starting at [1, -0.5].
const std::vector<std::vector<double>> kGradients = {{1, 2}, {2, -1}, {-1, 0.5}};

Tensor parameter(const std::vector<double>& values, DType dtype = kFloat64) {
  Tensor p = from_host(values.data(), {static_cast<int64_t>(values.size())}, kFloat64).to(dtype);
  return p.requires_grad_(true);
}

Tensor values_tensor(const std::vector<double>& values, DType dtype = kFloat64) {
  return from_host(values.data(), {static_cast<int64_t>(values.size())}, kFloat64).to(dtype);
}

struct ExpectedStep {
  std::vector<double> param;
  std::vector<double> momentum_buffer;  // empty: no buffer
};

// Runs the three steps of kGradients on p = [1, -0.5] and checks param and buffer after each.
void expect_steps(const SGDOptions& options, const std::vector<ExpectedStep>& expected,
                  DType dtype = kFloat64, double tolerance = 1e-12) {
  Tensor p = parameter({1, -0.5}, dtype);
  SGD optimizer({p}, options);
  for (size_t step = 0; step < expected.size(); ++step) {
    SCOPED_TRACE("step " + std::to_string(step + 1));
    p.set_grad(values_tensor(kGradients[step], dtype));
    optimizer.step();
    EXPECT_TRUE(all_close(p, values_tensor(expected[step].param), tolerance, tolerance));
    const ParamState* state = optimizer.state(p);
    if (expected[step].momentum_buffer.empty()) {
      EXPECT_TRUE(state == nullptr || state->count("momentum_buffer") == 0);
    } else {
      ASSERT_NE(state, nullptr);
      EXPECT_TRUE(all_close(state->at("momentum_buffer"),
                            values_tensor(expected[step].momentum_buffer), tolerance, tolerance));
    }
  }
}

// Hand computations: p = [1, -0.5], lr = 0.1, g1 = [1, 2], g2 = [2, -1], g3 = [-1, 0.5].

TEST(SGD, PlainStepsAreParamMinusLrTimesGrad) {
  // p1 = [1 - 0.1*1,   -0.5 - 0.1*2]    = [0.9, -0.7]
  // p2 = [0.9 - 0.1*2, -0.7 - 0.1*(-1)] = [0.7, -0.6]
  // p3 = [0.7 + 0.1,   -0.6 - 0.1*0.5]  = [0.8, -0.65]
  expect_steps(SGDOptions(0.1), {{{0.9, -0.7}, {}}, {{0.7, -0.6}, {}}, {{0.8, -0.65}, {}}});
}

TEST(SGD, MomentumBufferStartsAsTheGradient) {
  // momentum 0.9: b1 = g1 (no dampening on the first step), then b = 0.9 b + g.
  // b1 = [1, 2]                              p1 = [1 - 0.1, -0.5 - 0.2]       = [0.9, -0.7]
  // b2 = [0.9 + 2, 1.8 - 1]     = [2.9, 0.8]  p2 = [0.9 - 0.29, -0.7 - 0.08]  = [0.61, -0.78]
  // b3 = [2.61 - 1, 0.72 + 0.5] = [1.61, 1.22] p3 = [0.61 - 0.161, -0.78 - 0.122] = [0.449, -0.902]
  expect_steps(
      SGDOptions(0.1).momentum(0.9),
      {{{0.9, -0.7}, {1, 2}}, {{0.61, -0.78}, {2.9, 0.8}}, {{0.449, -0.902}, {1.61, 1.22}}});
}

TEST(SGD, DampeningScalesTheGradientAfterTheFirstStep) {
  // momentum 0.9, dampening 0.5: b1 = g1, then b = 0.9 b + (1 - 0.5) g.
  // b1 = [1, 2]                                   p1 = [0.9, -0.7]
  // b2 = [0.9 + 1, 1.8 - 0.5]      = [1.9, 1.3]    p2 = [0.9 - 0.19, -0.7 - 0.13] = [0.71, -0.83]
  // b3 = [1.71 - 0.5, 1.17 + 0.25] = [1.21, 1.42]  p3 = [0.71 - 0.121, -0.83 - 0.142]
  //                                                   = [0.589, -0.972]
  expect_steps(
      SGDOptions(0.1).momentum(0.9).dampening(0.5),
      {{{0.9, -0.7}, {1, 2}}, {{0.71, -0.83}, {1.9, 1.3}}, {{0.589, -0.972}, {1.21, 1.42}}});
}

TEST(SGD, WeightDecayAddsDecayTimesParamToTheGradient) {
  // weight decay 0.1: d = g + 0.1 p, p = p - 0.1 d.
  // d1 = [1 + 0.1, 2 - 0.05]             = [1.1, 1.95]        p1 = [0.89, -0.695]
  // d2 = [2 + 0.089, -1 - 0.0695]        = [2.089, -1.0695]   p2 = [0.6811, -0.58805]
  // d3 = [-1 + 0.06811, 0.5 - 0.058805]  = [-0.93189, 0.441195]
  //                                     p3 = [0.6811 + 0.093189, -0.58805 - 0.0441195]
  //                                        = [0.774289, -0.6321695]
  expect_steps(SGDOptions(0.1).weight_decay(0.1),
               {{{0.89, -0.695}, {}}, {{0.6811, -0.58805}, {}}, {{0.774289, -0.6321695}, {}}});
}

TEST(SGD, NesterovStepsAlongGradientPlusMomentumTimesBuffer) {
  // momentum 0.9, nesterov: b as with plain momentum, d = g + 0.9 b.
  // b1 = [1, 2]      d1 = [1 + 0.9, 2 + 1.8]       = [1.9, 3.8]    p1 = [0.81, -0.88]
  // b2 = [2.9, 0.8]  d2 = [2 + 2.61, -1 + 0.72]    = [4.61, -0.28] p2 = [0.349, -0.852]
  // b3 = [1.61, 1.22] d3 = [-1 + 1.449, 0.5 + 1.098] = [0.449, 1.598]
  //                                                p3 = [0.349 - 0.0449, -0.852 - 0.1598]
  //                                                   = [0.3041, -1.0118]
  expect_steps(
      SGDOptions(0.1).momentum(0.9).nesterov(true),
      {{{0.81, -0.88}, {1, 2}}, {{0.349, -0.852}, {2.9, 0.8}}, {{0.3041, -1.0118}, {1.61, 1.22}}});
}

TEST(SGD, MomentumWithWeightDecayBuffersTheDecayedGradient) {
  // momentum 0.9, weight decay 0.1: d = g + 0.1 p; b1 = d1, then b = 0.9 b + d.
  // d1 = [1.1, 1.95]           b1 = [1.1, 1.95]                         p1 = [0.89, -0.695]
  // d2 = [2.089, -1.0695]      b2 = [0.99 + 2.089, 1.755 - 1.0695]
  //                               = [3.079, 0.6855]                     p2 = [0.5821, -0.76355]
  // d3 = [-1 + 0.05821, 0.5 - 0.076355] = [-0.94179, 0.423645]
  //                            b3 = [2.7711 - 0.94179, 0.61695 + 0.423645]
  //                               = [1.82931, 1.040595]
  //                            p3 = [0.5821 - 0.182931, -0.76355 - 0.1040595]
  //                               = [0.399169, -0.8676095]
  expect_steps(SGDOptions(0.1).momentum(0.9).weight_decay(0.1),
               {{{0.89, -0.695}, {1.1, 1.95}},
                {{0.5821, -0.76355}, {3.079, 0.6855}},
                {{0.399169, -0.8676095}, {1.82931, 1.040595}}});
}

TEST(SGD, Float32FollowsTheSameRule) {
  // The Nesterov case above, computed in float: the same values to float precision.
  expect_steps(
      SGDOptions(0.1).momentum(0.9).nesterov(true),
      {{{0.81, -0.88}, {1, 2}}, {{0.349, -0.852}, {2.9, 0.8}}, {{0.3041, -1.0118}, {1.61, 1.22}}},
      kFloat32, 1e-6);
}

TEST(SGD, SixteenBitParametersComputeInFloat) {
  // The momentum case above; bfloat16 keeps 8 bits of mantissa (relative error <= 2^-8 per
  // rounding), float16 keeps 11.
  const std::vector<ExpectedStep> expected = {
      {{0.9, -0.7}, {1, 2}}, {{0.61, -0.78}, {2.9, 0.8}}, {{0.449, -0.902}, {1.61, 1.22}}};
  expect_steps(SGDOptions(0.1).momentum(0.9), expected, kBFloat16, 2e-2);
  expect_steps(SGDOptions(0.1).momentum(0.9), expected, kFloat16, 2e-3);
}

TEST(SGD, GroupsHaveTheirOwnLearningRateAndWeightDecay) {
  // Group 0 (weights): defaults lr 0.1, weight decay 0.1. Group 1 (biases): lr 0.01, no decay.
  Tensor weight = parameter({1, -0.5});
  Tensor bias = parameter({2});
  SGD optimizer({OptimizerParamGroup({weight}),
                 OptimizerParamGroup({bias}, SGDOptions(0.01).weight_decay(0))},
                SGDOptions(0.1).weight_decay(0.1));
  weight.set_grad(values_tensor({1, 2}));
  bias.set_grad(values_tensor({3}));
  optimizer.step();
  // weight: d = [1 + 0.1, 2 - 0.05] = [1.1, 1.95]; p = [1 - 0.11, -0.5 - 0.195] = [0.89, -0.695]
  EXPECT_TRUE(all_close(weight, values_tensor({0.89, -0.695}), 1e-12, 1e-12));
  // bias: p = 2 - 0.01 * 3 = 1.97 (its group has no weight decay)
  EXPECT_TRUE(all_close(bias, values_tensor({1.97}), 1e-12, 1e-12));

  ASSERT_EQ(optimizer.param_groups().size(), 2u);
  EXPECT_DOUBLE_EQ(optimizer.param_groups()[1].options().get_lr(), 0.01);
  optimizer.param_groups()[1].options().set_lr(0.5);
  optimizer.step();
  // bias: 1.97 - 0.5 * 3 = 0.47
  EXPECT_TRUE(all_close(bias, values_tensor({0.47}), 1e-12, 1e-12));
}

TEST(SGD, AddParamGroupTakesTheDefaults) {
  Tensor a = parameter({1});
  Tensor b = parameter({1});
  SGD optimizer({a}, SGDOptions(0.1).momentum(0.5));
  optimizer.add_param_group(OptimizerParamGroup({b}));
  ASSERT_EQ(optimizer.param_groups().size(), 2u);
  const auto& added = dynamic_cast<const SGDOptions&>(optimizer.param_groups()[1].options());
  EXPECT_EQ(added.lr(), 0.1);
  EXPECT_EQ(added.momentum(), 0.5);
  EXPECT_EQ(optimizer.parameters().size(), 2u);
  EXPECT_TRUE(optimizer.parameters()[1].is_same(b));
}

TEST(SGD, ParametersWithoutGradientsAreLeftAlone) {
  Tensor with_grad = parameter({1});
  Tensor without_grad = parameter({5});
  SGD optimizer({with_grad, without_grad}, SGDOptions(0.1).momentum(0.9));
  with_grad.set_grad(values_tensor({1}));
  const uint64_t version = without_grad.version();
  optimizer.step();
  EXPECT_TRUE(all_close(without_grad, values_tensor({5}), 0, 0));
  EXPECT_EQ(without_grad.version(), version);
  EXPECT_EQ(optimizer.state(without_grad), nullptr);                      // no buffer made for it
  EXPECT_TRUE(all_close(with_grad, values_tensor({0.9}), 1e-12, 1e-12));  // 1 - 0.1 * 1
}

TEST(SGD, StepBumpsVersionsAndRecordsNoGraph) {
  Tensor p = parameter({1, 2});
  SGD optimizer({p}, SGDOptions(0.1).momentum(0.9));
  p.set_grad(values_tensor({1, 1}));
  const uint64_t version = p.version();
  ASSERT_TRUE(GradMode::is_enabled());
  optimizer.step();  // grad mode on: the step itself turns it off
  EXPECT_GT(p.version(), version);
  EXPECT_TRUE(p.is_leaf());
  EXPECT_TRUE(p.requires_grad());
  EXPECT_EQ(p.grad_fn(), nullptr);
  EXPECT_GT(optimizer.state(p)->at("momentum_buffer").version(), 0u);
  EXPECT_TRUE(GradMode::is_enabled());
}

TEST(SGD, TrainsOnAGradientFromBackward) {
  // Minimising (p - 3)^2 from p = 0 with lr 0.25: g = 2 (p - 3), p' = p - 0.5 (p - 3), so the
  // distance to 3 halves each step: 3, 1.5, 0.75 -> p = 0, 1.5, 2.25, 2.625.
  Tensor p = parameter({0});
  SGD optimizer({p}, SGDOptions(0.25));
  for (double expected : {1.5, 2.25, 2.625}) {
    optimizer.zero_grad();
    Tensor loss = sum((p - 3.0) * (p - 3.0));
    loss.backward();
    optimizer.step();
    EXPECT_TRUE(all_close(p, values_tensor({expected}), 1e-12, 1e-12));
  }
}

TEST(SGD, ZeroGradDropsOrZeroesGradients) {
  Tensor p = parameter({1, 2});
  SGD optimizer({p}, SGDOptions(0.1));
  p.set_grad(values_tensor({3, 4}));
  optimizer.zero_grad(/*set_to_none=*/false);
  ASSERT_TRUE(p.grad().defined());
  EXPECT_TRUE(all_close(p.grad(), values_tensor({0, 0}), 0, 0));
  optimizer.zero_grad();
  EXPECT_FALSE(p.grad().defined());
}

TEST(SGD, ColumnMajorParameterWithRowMajorGradient) {
  // A [2, 3] parameter stored column-major; its gradient arrives row-major and is laid out like
  // the parameter before the flat update. Element (i, j) must still meet gradient (i, j).
  Tensor p = empty_strided({2, 3}, {1, 2}, kFloat64);
  const std::vector<double> start = {1, 2, 3, 4, 5, 6};  // row-major values
  p.copy_(from_host(start.data(), {2, 3}, kFloat64));
  p.requires_grad_(true);
  SGD optimizer({p}, SGDOptions(0.5).momentum(0.9));
  const std::vector<double> grad = {10, 20, 30, 40, 50, 60};
  p.set_grad(from_host(grad.data(), {2, 3}, kFloat64));
  optimizer.step();
  // p - 0.5 g, element by element: [1 - 5, 2 - 10, 3 - 15, 4 - 20, 5 - 25, 6 - 30]
  const std::vector<double> expected = {-4, -8, -12, -16, -20, -24};
  EXPECT_TRUE(all_close(p, from_host(expected.data(), {2, 3}, kFloat64), 0, 0));
  EXPECT_EQ(optimizer.state(p)->at("momentum_buffer").strides(), p.strides());
}

TEST(SGD, RejectsInvalidOptions) {
  Tensor p = parameter({1});
  EXPECT_ERROR_CONTAINS(SGD({p}, SGDOptions(0.1).nesterov(true)),
                        "Nesterov momentum requires a momentum > 0 and zero dampening, got "
                        "momentum 0 and dampening 0");
  EXPECT_ERROR_CONTAINS(SGD({p}, SGDOptions(0.1).momentum(0.9).dampening(0.1).nesterov(true)),
                        "Nesterov momentum requires a momentum > 0 and zero dampening, got "
                        "momentum 0.9 and dampening 0.1");
  EXPECT_ERROR_CONTAINS(SGD({p}, SGDOptions(-0.1)), "invalid learning rate -0.1; expected >= 0");
  EXPECT_ERROR_CONTAINS(SGD({p}, SGDOptions(0.1).momentum(-1)), "invalid momentum -1");
  EXPECT_ERROR_CONTAINS(SGD({p}, SGDOptions(0.1).weight_decay(-1)), "invalid weight_decay -1");
  // A group's own options are checked too, and so are options changed later.
  EXPECT_ERROR_CONTAINS(
      SGD({OptimizerParamGroup({p}, SGDOptions(0.1).nesterov(true))}, SGDOptions(0.1)),
      "SGD: param group 0: Nesterov momentum requires");
  SGD optimizer({p}, SGDOptions(0.1));
  optimizer.param_groups()[0].options().set_lr(-1);
  p.set_grad(values_tensor({1}));
  EXPECT_ERROR_CONTAINS(optimizer.step(), "SGD step: param group 0: invalid learning rate -1");
}

TEST(SGD, RejectsInvalidParameters) {
  Tensor p = parameter({1, 2});
  EXPECT_ERROR_CONTAINS(SGD(std::vector<Tensor>{}, SGDOptions(0.1)), "empty parameter list");
  EXPECT_ERROR_CONTAINS(SGD({p, p}, SGDOptions(0.1)), "appears more than once");
  Tensor q = parameter({3});
  EXPECT_ERROR_CONTAINS(
      SGD({OptimizerParamGroup({p}), OptimizerParamGroup({q, p})}, SGDOptions(0.1)),
      "SGD: param group 1: parameter 1 of shape [2] appears more than once");
  EXPECT_ERROR_CONTAINS(SGD({p * 2.0}, SGDOptions(0.1)), "is not a leaf tensor");
  EXPECT_ERROR_CONTAINS(SGD({Tensor()}, SGDOptions(0.1)), "parameter 0 is undefined");

  // Every other element of a buffer has gaps: it cannot be updated by one flat loop.
  Tensor storage = zeros({4}, kFloat64);
  Tensor strided = storage.slice(0, 0, 4, 2);
  strided.requires_grad_(true);
  SGD optimizer({strided}, SGDOptions(0.1));
  strided.set_grad(values_tensor({1, 1}));
  EXPECT_ERROR_CONTAINS(optimizer.step(), "expected a dense parameter");
}

TEST(SGD, AFailedStepChangesNothing) {
  // Group 1 is invalid; group 0's parameter must not have moved when the step throws.
  Tensor good = parameter({1});
  Tensor bad = zeros({4}, kFloat64).slice(0, 0, 4, 2);
  bad.requires_grad_(true);
  SGD optimizer({OptimizerParamGroup({good}), OptimizerParamGroup({bad})},
                SGDOptions(0.1).momentum(0.9));
  good.set_grad(values_tensor({1}));
  bad.set_grad(values_tensor({1, 1}));
  EXPECT_ERROR_CONTAINS(optimizer.step(), "param group 1, parameter 0");
  EXPECT_TRUE(all_close(good, values_tensor({1}), 0, 0));
  EXPECT_EQ(optimizer.state(good), nullptr);
}

}  // namespace
}  // namespace minidl::optim
