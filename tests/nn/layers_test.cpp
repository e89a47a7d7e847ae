// The layers: each forward against its functional op, default initialisation against
// PyTorch's bounds, shape checks, and printing.
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "minidl/nn/nn.h"
#include "minidl/ops/conv.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/loss.h"
#include "minidl/ops/pool.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "minidl/ops/shape.h"
#include "test_util.h"

namespace minidl {
namespace {

namespace F = nn::functional;
using testing::all_close;

// Bit-for-bit equality of values and shapes.
::testing::AssertionResult identical(const Tensor& actual, const Tensor& expected) {
  return all_close(actual, expected, 0, 0);
}

std::string printed(const nn::Module& module) {
  std::ostringstream out;
  module.pretty_print(out);
  return out.str();
}

// All values within [-bound, bound] and spreading over most of it, as uniform(-bound, bound).
void expect_uniform_init(const Tensor& t, double bound) {
  EXPECT_LE(max(t).item<double>(), bound);
  EXPECT_GE(min(t).item<double>(), -bound);
  EXPECT_GT(max(t).item<double>(), 0.9 * bound);
  EXPECT_LT(min(t).item<double>(), -0.9 * bound);
}

// ---- Linear ----

TEST(Linear, ForwardIsTheFunctionalLinear) {
  nn::Linear linear(6, 4);
  EXPECT_EQ(linear->weight.sizes(), (Shape{4, 6}));
  EXPECT_EQ(linear->bias.sizes(), (Shape{4}));
  Tensor x = randn({3, 5, 6});
  EXPECT_TRUE(identical(linear(x), F::linear(x, linear->weight, linear->bias)));
  EXPECT_EQ(linear(x).sizes(), (Shape{3, 5, 4}));
}

TEST(Linear, DefaultInitIsUniformWithinOneOverSqrtFanIn) {
  manual_seed(11);
  nn::Linear linear(400, 300);
  const double bound = 1.0 / std::sqrt(400.0);
  expect_uniform_init(linear->weight, bound);
  expect_uniform_init(linear->bias, bound);
}

TEST(Linear, WithoutBias) {
  nn::Linear linear(nn::LinearOptions(3, 2).bias(false));
  EXPECT_FALSE(linear->bias.defined());
  EXPECT_EQ(linear->named_parameters().keys(), (std::vector<std::string>{"weight"}));
  Tensor x = randn({2, 3});
  EXPECT_TRUE(identical(linear(x), F::linear(x, linear->weight)));
  EXPECT_EQ(printed(*linear), "Linear(in_features=3, out_features=2, bias=false)");
}

TEST(Linear, ChecksTheInputAndOptions) {
  nn::Linear linear(784, 10);
  EXPECT_ERROR_CONTAINS(
      linear(randn({2, 28, 28})),
      "Linear: expected input of shape [..., 784] (in_features), got [2, 28, 28]");
  EXPECT_ERROR_CONTAINS(nn::Linear(0, 3), "expected positive in_features and out_features");
}

// ---- Conv2d ----

TEST(Conv2d, ForwardIsTheFunctionalConv2d) {
  nn::Conv2d conv(nn::Conv2dOptions(4, 6, {3, 2}).stride({2, 1}).padding(1).dilation(1).groups(2));
  EXPECT_EQ(conv->weight.sizes(), (Shape{6, 2, 3, 2}));
  Tensor x = randn({2, 4, 9, 8});
  Tensor expected = conv2d(x, conv->weight, conv->bias, Size2{2, 1}, 1, 1, 2);
  EXPECT_TRUE(identical(conv(x), expected));
  EXPECT_TRUE(
      identical(conv(x), F::conv2d(x, conv->weight, conv->bias,
                                   nn::Conv2dFuncOptions().stride({2, 1}).padding(1).groups(2))));
}

TEST(Conv2d, DefaultInitIsUniformWithinOneOverSqrtFanIn) {
  manual_seed(12);
  nn::Conv2d conv(nn::Conv2dOptions(32, 64, 3).groups(2));
  const double bound = 1.0 / std::sqrt(16.0 * 3 * 3);  // fan_in = in / groups * kH * kW
  expect_uniform_init(conv->weight, bound);
  expect_uniform_init(conv->bias, bound);
}

TEST(Conv2d, OptionsPrintingAndChecks) {
  nn::Conv2d conv(nn::Conv2dOptions(3, 64, 3).stride(1).padding(1).bias(false));
  EXPECT_FALSE(conv->bias.defined());
  EXPECT_EQ(conv->named_parameters().keys(), (std::vector<std::string>{"weight"}));
  EXPECT_EQ(printed(*conv),
            "Conv2d(3, 64, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=false)");
  EXPECT_EQ(printed(*nn::Conv2d(1, 6, 5)), "Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1))");
  EXPECT_ERROR_CONTAINS(
      conv(randn({1, 4, 8, 8})),
      "Conv2d: expected input of shape [N, 3 (in_channels), H, W], got [1, 4, 8, 8]");
  EXPECT_ERROR_CONTAINS(nn::Conv2d(nn::Conv2dOptions(3, 6, 3).groups(2)),
                        "to be divisible by groups (2)");
}

// ---- BatchNorm2d ----

TEST(BatchNorm2d, RegistersPyTorchsParametersAndBuffers) {
  nn::BatchNorm2d bn(5);
  EXPECT_EQ(bn->named_parameters().keys(), (std::vector<std::string>{"weight", "bias"}));
  EXPECT_EQ(bn->named_buffers().keys(),
            (std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked"}));
  EXPECT_EQ(to_vector<float>(bn->weight), std::vector<float>(5, 1.0f));
  EXPECT_EQ(to_vector<float>(bn->bias), std::vector<float>(5, 0.0f));
  EXPECT_EQ(to_vector<float>(bn->running_mean), std::vector<float>(5, 0.0f));
  EXPECT_EQ(to_vector<float>(bn->running_var), std::vector<float>(5, 1.0f));
  EXPECT_EQ(bn->num_batches_tracked.dtype(), kInt64);
  EXPECT_EQ(bn->num_batches_tracked.dim(), 0);
  EXPECT_EQ(printed(*bn),
            "BatchNorm2d(5, eps=1e-05, momentum=0.1, affine=true, track_running_stats=true)");
}

TEST(BatchNorm2d, TrainingNormalisesWithTheBatchAndUpdatesRunningStatistics) {
  nn::BatchNorm2d bn(nn::BatchNorm2dOptions(3).momentum(0.25));
  nn::init::uniform_(bn->weight, 0.5, 2.0);
  nn::init::uniform_(bn->bias, -1.0, 1.0);
  Tensor x = randn({4, 3, 5, 5}) * 2.0 + 1.0;

  Tensor expected_running_mean = bn->running_mean.clone(),
         expected_running_var = bn->running_var.clone();
  Tensor expected = F::batch_norm(
      x, expected_running_mean, expected_running_var,
      nn::BatchNormFuncOptions().weight(bn->weight).bias(bn->bias).training(true).momentum(0.25));
  EXPECT_TRUE(identical(bn(x), expected));
  EXPECT_TRUE(identical(bn->running_mean, expected_running_mean));
  EXPECT_TRUE(identical(bn->running_var, expected_running_var));
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);

  // The running statistics moved a quarter of the way from (0, 1) to the batch's mean and
  // unbiased variance.
  const Tensor batch_mean = mean(x, {0, 2, 3});
  const Tensor batch_var = var(x, {0, 2, 3});
  EXPECT_TRUE(all_close(bn->running_mean, batch_mean * 0.25, 1e-6, 1e-5));
  EXPECT_TRUE(all_close(bn->running_var, batch_var * 0.25 + 0.75, 1e-6, 1e-5));
}

TEST(BatchNorm2d, EvaluationNormalisesWithTheRunningStatistics) {
  nn::BatchNorm2d bn(3);
  bn(randn({4, 3, 5, 5}) + 3.0);  // moves the running statistics away from (0, 1)
  bn->eval();
  const Tensor running_mean_before = bn->running_mean.clone();
  Tensor x = randn({2, 3, 4, 4});
  Tensor expected = F::batch_norm(x, bn->running_mean, bn->running_var,
                                  nn::BatchNormFuncOptions().weight(bn->weight).bias(bn->bias));
  EXPECT_TRUE(identical(bn(x), expected));
  EXPECT_TRUE(identical(bn->running_mean, running_mean_before));  // not updated in eval
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
}

TEST(BatchNorm2d, WithoutMomentumRunningStatisticsAreTheCumulativeAverage) {
  nn::BatchNorm2d bn(nn::BatchNorm2dOptions(2).momentum(std::nullopt));
  Tensor first = randn({3, 2, 4, 4}) + 2.0, second = randn({3, 2, 4, 4}) - 1.0;
  bn(first);
  bn(second);
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 2);
  Tensor expected = (mean(first, {0, 2, 3}) + mean(second, {0, 2, 3})) * 0.5;
  EXPECT_TRUE(all_close(bn->running_mean, expected, 1e-6, 1e-5));
  EXPECT_EQ(printed(*bn).find("momentum=none") != std::string::npos, true);
}

TEST(BatchNorm2d, WithoutAffineOrRunningStatistics) {
  nn::BatchNorm2d bn(nn::BatchNorm2dOptions(2).affine(false).track_running_stats(false));
  EXPECT_TRUE(bn->parameters().empty());
  EXPECT_TRUE(bn->buffers().empty());
  bn->eval();  // no running statistics: evaluation uses the batch's
  Tensor x = randn({3, 2, 4, 4});
  Tensor expected = F::batch_norm(x, Tensor(), Tensor(), nn::BatchNormFuncOptions().training(true));
  EXPECT_TRUE(identical(bn(x), expected));
}

TEST(BatchNorm2d, ChecksTheInput) {
  nn::BatchNorm2d bn(64);
  EXPECT_ERROR_CONTAINS(
      bn(randn({2, 32, 4, 4})),
      "BatchNorm2d: expected input of shape [N, 64 (num_features), H, W], got [2, 32, 4, 4]");
}

// ---- parameter-free layers ----

TEST(Activations, ForwardIsTheFunctionalOp) {
  Tensor x = randn({3, 7});
  EXPECT_TRUE(identical(nn::ReLU()(x), F::relu(x)));
  EXPECT_TRUE(identical(nn::Sigmoid()(x), F::sigmoid(x)));
  EXPECT_TRUE(identical(nn::Tanh()(x), F::tanh(x)));
  EXPECT_TRUE(identical(nn::GELU()(x), F::gelu(x)));
  EXPECT_TRUE(identical(F::relu(x), relu(x)));
  EXPECT_TRUE(nn::Identity()(x).is_same(x));
  EXPECT_EQ(printed(*nn::ReLU()), "ReLU()");
  EXPECT_EQ(printed(*nn::GELU()), "GELU(approximate='none')");
  EXPECT_TRUE(nn::ReLU()->parameters().empty());
}

TEST(Activations, GELUTakesTheTanhApproximationAsLibTorchs) {
  Tensor x = randn({3, 7});
  nn::GELU approximate(nn::GELUOptions().approximate("tanh"));
  EXPECT_TRUE(identical(approximate(x), gelu(x, "tanh")));
  EXPECT_TRUE(identical(F::gelu(x, nn::GELUFuncOptions().approximate("tanh")), gelu(x, "tanh")));
  EXPECT_FALSE(identical(gelu(x, "tanh"), gelu(x)));
  EXPECT_EQ(printed(*approximate), "GELU(approximate='tanh')");
  EXPECT_ERROR_CONTAINS(gelu(x, "erf"),
                        "gelu: expected approximate to be 'none' or 'tanh', found 'erf'");
}

TEST(Activations, SiLULeakyReLUAndELUTakeTheirOptionsAsLibTorchs) {
  Tensor x = randn({3, 7});
  EXPECT_TRUE(identical(nn::SiLU()(x), silu(x)));
  EXPECT_TRUE(identical(nn::LeakyReLU()(x), leaky_relu(x, 0.01)));
  EXPECT_TRUE(identical(nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2))(x),
                        F::leaky_relu(x, nn::LeakyReLUFuncOptions().negative_slope(0.2))));
  EXPECT_TRUE(identical(nn::ELU(nn::ELUOptions().alpha(1.5))(x), elu(x, 1.5)));
  EXPECT_TRUE(identical(F::elu(x), elu(x, 1.0)));
  // Known values: a negative input on each side's formula.
  const Tensor minus_two = tensor({-2.0, 3.0});
  EXPECT_EQ(to_vector<float>(nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.25))(minus_two)),
            (std::vector<float>{-0.5f, 3.0f}));
  EXPECT_FLOAT_EQ(to_vector<float>(nn::ELU()(minus_two))[0], std::expm1(-2.0f));
  EXPECT_EQ(printed(*nn::SiLU()), "SiLU()");
  EXPECT_EQ(printed(*nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2))),
            "LeakyReLU(negative_slope=0.2)");
  EXPECT_EQ(printed(*nn::ELU()), "ELU(alpha=1)");
  EXPECT_TRUE(nn::ELU()->parameters().empty());
}

TEST(Activations, SoftplusAndHardtanhTakeTheirOptionsAsLibTorchs) {
  Tensor x = randn({3, 7}).mul(8.0);  // some past softplus's threshold 3 at beta 2
  EXPECT_TRUE(identical(nn::Softplus()(x), softplus(x, 1.0, 20.0)));
  EXPECT_TRUE(identical(F::softplus(x), softplus(x)));
  EXPECT_TRUE(identical(nn::Softplus(nn::SoftplusOptions().beta(2.0).threshold(3.0))(x),
                        F::softplus(x, nn::SoftplusFuncOptions().beta(2.0).threshold(3.0))));
  EXPECT_TRUE(identical(nn::Softplus(nn::SoftplusOptions().beta(2.0).threshold(3.0))(x),
                        softplus(x, 2.0, 3.0)));
  EXPECT_TRUE(identical(nn::Hardtanh()(x), hardtanh(x, -1.0, 1.0)));
  EXPECT_TRUE(identical(nn::Hardtanh(nn::HardtanhOptions().min_val(-0.5).max_val(2.0))(x),
                        F::hardtanh(x, nn::HardtanhFuncOptions().min_val(-0.5).max_val(2.0))));
  // Known values: softplus(0) = log(2); hardtanh clamps to its bounds.
  EXPECT_FLOAT_EQ(to_vector<float>(nn::Softplus()(zeros({1})))[0], std::log(2.0f));
  EXPECT_EQ(to_vector<float>(nn::Hardtanh()(tensor({-3.0, 0.25, 3.0}))),
            (std::vector<float>{-1.0f, 0.25f, 1.0f}));
  EXPECT_EQ(printed(*nn::Softplus()), "Softplus(beta=1, threshold=20)");
  EXPECT_EQ(printed(*nn::Hardtanh(nn::HardtanhOptions().min_val(-2.0))),
            "Hardtanh(min_val=-2, max_val=1)");
  EXPECT_TRUE(nn::Softplus()->parameters().empty());
  EXPECT_TRUE(nn::Hardtanh()->parameters().empty());
  EXPECT_ERROR_CONTAINS(nn::Hardtanh(nn::HardtanhOptions().min_val(1.0).max_val(1.0)),
                        "Hardtanh: expected max_val > min_val, got min_val 1 and max_val 1");
  EXPECT_ERROR_CONTAINS(F::hardtanh(x, nn::HardtanhFuncOptions().min_val(2.0)),
                        "hardtanh: expected min_val <= max_val");
}

TEST(Pooling, ForwardIsTheFunctionalOpWithStrideDefaultingToTheKernel) {
  Tensor x = randn({2, 3, 8, 8});
  nn::MaxPool2d max_pool(2);
  EXPECT_EQ(max_pool->options.stride(), Size2(2));
  EXPECT_TRUE(identical(max_pool(x), F::max_pool2d(x, nn::MaxPool2dFuncOptions(2))));
  EXPECT_TRUE(identical(max_pool(x), F::max_pool2d(x, 2)));
  EXPECT_TRUE(identical(nn::AvgPool2d(2)(x), F::avg_pool2d(x, 2)));
  EXPECT_EQ(max_pool(x).sizes(), (Shape{2, 3, 4, 4}));

  nn::MaxPool2d overlapping(nn::MaxPool2dOptions(3).stride(2).padding(1));
  EXPECT_TRUE(identical(overlapping(x), max_pool2d(x, 3, Size2(2), 1)));

  nn::AvgPool2d avg_pool(nn::AvgPool2dOptions(3).stride(2).padding(1).count_include_pad(false));
  EXPECT_TRUE(identical(avg_pool(x), avg_pool2d(x, 3, Size2(2), 1, false)));

  nn::AdaptiveAvgPool2d global(1);
  EXPECT_TRUE(identical(global(x), F::adaptive_avg_pool2d(x, 1)));
  EXPECT_EQ(global(x).sizes(), (Shape{2, 3, 1, 1}));

  EXPECT_EQ(printed(*max_pool), "MaxPool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))");
  EXPECT_EQ(printed(*nn::AvgPool2d(2)),
            "AvgPool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))");
  EXPECT_EQ(printed(*nn::AdaptiveAvgPool2d(Size2{2, 3})), "AdaptiveAvgPool2d(output_size=(2, 3))");
}

TEST(Flatten, KeepsTheBatchDimByDefault) {
  Tensor x = randn({2, 3, 4, 5});
  EXPECT_EQ(nn::Flatten()(x).sizes(), (Shape{2, 60}));
  EXPECT_EQ(nn::Flatten(nn::FlattenOptions().start_dim(2))(x).sizes(), (Shape{2, 3, 20}));
  EXPECT_EQ(nn::Flatten(nn::FlattenOptions().start_dim(0).end_dim(1))(x).sizes(), (Shape{6, 4, 5}));
  EXPECT_TRUE(identical(nn::Flatten()(x), flatten(x, 1)));
}

TEST(Dropout, ZeroesAndScalesInTrainingOnly) {
  nn::Dropout dropout(0.25);
  Tensor x = ones({100, 100});
  const std::vector<float> values = to_vector<float>(dropout(x));
  int64_t zeros_seen = 0;
  for (float v : values) {
    EXPECT_TRUE(v == 0.0f || std::abs(v - 1.0f / 0.75f) < 1e-6f) << v;
    zeros_seen += v == 0.0f;
  }
  EXPECT_NEAR(static_cast<double>(zeros_seen) / values.size(), 0.25, 0.02);

  manual_seed(5);
  Tensor masked = dropout(x);
  manual_seed(5);
  EXPECT_TRUE(identical(masked, F::dropout(x, nn::DropoutFuncOptions().p(0.25).training(true))));

  dropout->eval();
  EXPECT_TRUE(identical(dropout(x), x));
  EXPECT_EQ(printed(*dropout), "Dropout(p=0.25)");
  EXPECT_ERROR_CONTAINS(nn::Dropout(1.5), "Dropout: expected a probability p in [0, 1], got 1.5");
}

// ---- losses ----

TEST(Losses, ModulesAreTheFunctionalLosses) {
  Tensor logits = randn({6, 4});
  Tensor target = tensor(std::vector<int64_t>{0, 3, 1, 2, 3, 0});
  EXPECT_TRUE(identical(nn::CrossEntropyLoss()(logits, target), cross_entropy(logits, target)));
  nn::CrossEntropyLoss smoothed(
      nn::CrossEntropyLossOptions().label_smoothing(0.1).reduction(Reduction::Sum));
  EXPECT_TRUE(
      identical(smoothed(logits, target), cross_entropy(logits, target, Reduction::Sum, 0.1)));
  EXPECT_TRUE(identical(F::cross_entropy(logits, target), cross_entropy(logits, target)));

  Tensor prediction = randn({3, 5}), expected = randn({3, 5});
  EXPECT_TRUE(identical(nn::MSELoss()(prediction, expected), mse_loss(prediction, expected)));
  nn::MSELoss per_element(nn::MSELossOptions().reduction(Reduction::None));
  EXPECT_EQ(per_element(prediction, expected).sizes(), (Shape{3, 5}));
  EXPECT_ERROR_CONTAINS(nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().label_smoothing(1.0)),
                        "expected label_smoothing in [0, 1)");
}

}  // namespace
}  // namespace minidl
