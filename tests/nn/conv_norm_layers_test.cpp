// nn::Conv1d, nn::ConvTranspose2d, nn::BatchNorm1d and nn::GroupNorm: each forward against its
// functional form, parameter and buffer names and shapes as PyTorch's state_dict, default
// initialisation against PyTorch's bounds, training and evaluation, printing, and the checks.
#include <cmath>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "minidl/nn/nn.h"
#include "minidl/ops/conv1d.h"
#include "minidl/ops/conv_transpose.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/group_norm.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

namespace F = nn::functional;
using testing::all_close;

::testing::AssertionResult identical(const Tensor& actual, const Tensor& expected) {
  return all_close(actual, expected, 0, 0);
}

std::string printed(const nn::Module& module) {
  std::ostringstream out;
  module.pretty_print(out);
  return out.str();
}

std::vector<std::string> state_dict_keys(const nn::Module& module) {
  std::vector<std::string> keys = module.named_parameters().keys();
  for (const std::string& key : module.named_buffers().keys()) keys.push_back(key);
  return keys;
}

// All values within [-bound, bound] and spreading over most of it, as uniform(-bound, bound).
void expect_uniform_init(const Tensor& t, double bound) {
  EXPECT_LE(max(t).item<double>(), bound);
  EXPECT_GE(min(t).item<double>(), -bound);
  EXPECT_GT(max(t).item<double>(), 0.9 * bound);
  EXPECT_LT(min(t).item<double>(), -0.9 * bound);
}

// ---- Conv1d ----

TEST(Conv1d, ForwardIsTheFunctionalConv1d) {
  nn::Conv1d conv(nn::Conv1dOptions(4, 6, 3).stride(2).padding(1).dilation(2).groups(2));
  EXPECT_EQ(conv->weight.sizes(), (Shape{6, 2, 3}));
  EXPECT_EQ(conv->bias.sizes(), (Shape{6}));
  EXPECT_EQ(state_dict_keys(*conv), (std::vector<std::string>{"weight", "bias"}));
  const Tensor x = randn({2, 4, 11});
  EXPECT_TRUE(identical(conv(x), conv1d(x, conv->weight, conv->bias, 2, 1, 2, 2)));
  EXPECT_TRUE(identical(
      conv(x), F::conv1d(x, conv->weight, conv->bias,
                         nn::Conv1dFuncOptions().stride(2).padding(1).dilation(2).groups(2))));
}

TEST(Conv1d, DefaultInitIsUniformWithinOneOverSqrtFanIn) {
  manual_seed(13);
  nn::Conv1d conv(nn::Conv1dOptions(32, 64, 5).groups(2));
  const double bound = 1.0 / std::sqrt(16.0 * 5);  // fan_in = in / groups * k
  expect_uniform_init(conv->weight, bound);
  expect_uniform_init(conv->bias, bound);
}

TEST(Conv1d, OptionsPrintingAndChecks) {
  nn::Conv1d conv(nn::Conv1dOptions(3, 16, 3).padding(1).bias(false));
  EXPECT_EQ(state_dict_keys(*conv), (std::vector<std::string>{"weight"}));
  EXPECT_EQ(printed(*conv),
            "Conv1d(3, 16, kernel_size=(3,), stride=(1,), padding=(1,), bias=false)");
  EXPECT_EQ(printed(*nn::Conv1d(nn::Conv1dOptions(4, 8, 2).dilation(2).groups(4))),
            "Conv1d(4, 8, kernel_size=(2,), stride=(1,), dilation=(2,), groups=4)");
  EXPECT_ERROR_CONTAINS(conv(randn({1, 4, 8})),
                        "Conv1d: expected input of shape [N, 3 (in_channels), L], got [1, 4, 8]");
  EXPECT_ERROR_CONTAINS(conv(randn({1, 3, 8, 1})), "Conv1d: expected input of shape");
  EXPECT_ERROR_CONTAINS(nn::Conv1d(nn::Conv1dOptions(3, 6, 3).groups(2)),
                        "Conv1d: expected in_channels (3) and out_channels (6) to be divisible by "
                        "groups (2)");
  EXPECT_ERROR_CONTAINS(nn::Conv1d(0, 6, 3), "Conv1d: expected positive in_channels");
  EXPECT_ERROR_CONTAINS(nn::Conv1d(3, 6, 0), "Conv1d: expected a positive kernel_size, got 0");
}

// ---- ConvTranspose2d ----

TEST(ConvTranspose2d, ForwardIsTheFunctionalConvTranspose2d) {
  nn::ConvTranspose2d conv(nn::ConvTranspose2dOptions(4, 6, {3, 2})
                               .stride({2, 1})
                               .padding(1)
                               .output_padding({1, 0})
                               .groups(2)
                               .dilation(1));
  // PyTorch's layout for a transposed convolution: [in, out / groups, kH, kW].
  EXPECT_EQ(conv->weight.sizes(), (Shape{4, 3, 3, 2}));
  EXPECT_EQ(conv->bias.sizes(), (Shape{6}));
  EXPECT_EQ(state_dict_keys(*conv), (std::vector<std::string>{"weight", "bias"}));
  const Tensor x = randn({2, 4, 5, 6});
  const Tensor y = conv(x);
  EXPECT_EQ(y.sizes(), (Shape{2, 6, 4 * 2 - 2 + 2 + 1 + 1, 5 - 2 + 1 + 1}));
  EXPECT_TRUE(identical(
      y, conv_transpose2d(x, conv->weight, conv->bias, Size2{2, 1}, 1, Size2{1, 0}, 2, 1)));
  EXPECT_TRUE(identical(
      y,
      F::conv_transpose2d(
          x, conv->weight, conv->bias,
          nn::ConvTranspose2dFuncOptions().stride({2, 1}).padding(1).output_padding({1, 0}).groups(
              2))));
}

TEST(ConvTranspose2d, DefaultInitIsUniformWithinOneOverSqrtFanIn) {
  manual_seed(14);
  nn::ConvTranspose2d conv(nn::ConvTranspose2dOptions(32, 64, 3).groups(2));
  // PyTorch's fan_in of a [in, out / groups, kH, kW] weight: out / groups * kH * kW.
  const double bound = 1.0 / std::sqrt(32.0 * 3 * 3);
  expect_uniform_init(conv->weight, bound);
  expect_uniform_init(conv->bias, bound);
}

TEST(ConvTranspose2d, OptionsPrintingAndChecks) {
  nn::ConvTranspose2d conv(
      nn::ConvTranspose2dOptions(16, 8, 3).stride(2).padding(1).output_padding(1).bias(false));
  EXPECT_EQ(state_dict_keys(*conv), (std::vector<std::string>{"weight"}));
  EXPECT_EQ(printed(*conv),
            "ConvTranspose2d(16, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), "
            "output_padding=(1, 1), bias=false)");
  EXPECT_EQ(printed(*nn::ConvTranspose2d(1, 6, 5)),
            "ConvTranspose2d(1, 6, kernel_size=(5, 5), stride=(1, 1))");
  EXPECT_ERROR_CONTAINS(conv(randn({1, 4, 8, 8})),
                        "ConvTranspose2d: expected input of shape [N, 16 (in_channels), H, W], got "
                        "[1, 4, 8, 8]");
  EXPECT_ERROR_CONTAINS(nn::ConvTranspose2d(nn::ConvTranspose2dOptions(3, 6, 3).groups(2)),
                        "ConvTranspose2d: expected in_channels (3) and out_channels (6) to be "
                        "divisible by groups (2)");
  // As PyTorch, output_padding is checked when the module runs.
  nn::ConvTranspose2d too_padded(nn::ConvTranspose2dOptions(2, 2, 3).output_padding(1));
  EXPECT_ERROR_CONTAINS(too_padded(randn({1, 2, 4, 4})),
                        "output padding must be smaller than either stride or dilation");
}

// ---- BatchNorm1d ----

TEST(BatchNorm1d, RegistersPyTorchsParametersAndBuffers) {
  nn::BatchNorm1d bn(5);
  EXPECT_EQ(state_dict_keys(*bn), (std::vector<std::string>{"weight", "bias", "running_mean",
                                                            "running_var", "num_batches_tracked"}));
  EXPECT_EQ(to_vector<float>(bn->weight), std::vector<float>(5, 1.0f));
  EXPECT_EQ(to_vector<float>(bn->bias), std::vector<float>(5, 0.0f));
  EXPECT_EQ(to_vector<float>(bn->running_mean), std::vector<float>(5, 0.0f));
  EXPECT_EQ(to_vector<float>(bn->running_var), std::vector<float>(5, 1.0f));
  EXPECT_EQ(bn->num_batches_tracked.dtype(), kInt64);
  EXPECT_EQ(printed(*bn),
            "BatchNorm1d(5, eps=1e-05, momentum=0.1, affine=true, track_running_stats=true)");
  EXPECT_EQ(state_dict_keys(*nn::BatchNorm1d(nn::BatchNorm1dOptions(3).affine(false))),
            (std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked"}));
  EXPECT_TRUE(
      state_dict_keys(*nn::BatchNorm1d(nn::BatchNorm1dOptions(3).track_running_stats(false)))
          .size() == 2);
}

TEST(BatchNorm1d, TrainingOnFeaturesAndSequencesNormalisesWithTheBatch) {
  for (const Shape& sizes : {Shape{8, 3}, Shape{4, 3, 6}}) {
    nn::BatchNorm1d bn(nn::BatchNorm1dOptions(3).momentum(0.25));
    nn::init::uniform_(bn->weight, 0.5, 2.0);
    nn::init::uniform_(bn->bias, -1.0, 1.0);
    const Tensor x = randn(sizes) * 2.0 + 1.0;
    Shape reduced{0};
    if (sizes.size() == 3) reduced.push_back(2);
    Shape per_channel(sizes.size(), 1);
    per_channel[1] = 3;
    // By the definition: the batch's mean and biased variance per channel.
    const Tensor batch_mean = mean(x, reduced, true);
    const Tensor biased_var = mean((x - batch_mean) * (x - batch_mean), reduced, true);
    const Tensor expected =
        (x - batch_mean) / sqrt(biased_var + 1e-5) * bn->weight.view(per_channel) +
        bn->bias.view(per_channel);
    EXPECT_TRUE(all_close(bn(x), expected, 1e-5, 1e-5)) << shape_str(sizes);
    EXPECT_TRUE(all_close(bn->running_mean, mean(x, reduced) * 0.25, 1e-6, 1e-5));
    EXPECT_TRUE(all_close(bn->running_var, var(x, reduced) * 0.25 + 0.75, 1e-6, 1e-5));
    EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  }
}

TEST(BatchNorm1d, EvaluationNormalisesWithTheRunningStatistics) {
  nn::BatchNorm1d bn(3);
  bn(randn({16, 3}) + 3.0);
  bn->eval();
  const Tensor running_mean_before = bn->running_mean.clone();
  const Tensor x = randn({2, 3, 5});
  const Tensor expected =
      F::batch_norm(x, bn->running_mean, bn->running_var,
                    nn::BatchNormFuncOptions().weight(bn->weight).bias(bn->bias));
  EXPECT_TRUE(identical(bn(x), expected));
  EXPECT_TRUE(identical(bn->running_mean, running_mean_before));
}

TEST(BatchNorm1d, ChecksTheInputAndOptions) {
  nn::BatchNorm1d bn(4);
  EXPECT_ERROR_CONTAINS(bn(randn({2, 4, 3, 3})),
                        "BatchNorm1d: expected input of shape [N, 4 (num_features)] or [N, 4, L], "
                        "got [2, 4, 3, 3]");
  EXPECT_ERROR_CONTAINS(bn(randn({2, 3})), "BatchNorm1d: expected input of shape");
  EXPECT_ERROR_CONTAINS(nn::BatchNorm1d(0), "BatchNorm1d: expected a positive num_features, got 0");
  EXPECT_ERROR_CONTAINS(nn::BatchNorm1d(nn::BatchNorm1dOptions(2).momentum(1.5)),
                        "BatchNorm1d: expected momentum in [0, 1]");
}

// ---- GroupNorm ----

TEST(GroupNorm, RegistersPyTorchsParametersAndIsTheFunctionalGroupNorm) {
  nn::GroupNorm gn(nn::GroupNormOptions(3, 6).eps(1e-3));
  EXPECT_EQ(state_dict_keys(*gn), (std::vector<std::string>{"weight", "bias"}));
  EXPECT_EQ(to_vector<float>(gn->weight), std::vector<float>(6, 1.0f));
  EXPECT_EQ(to_vector<float>(gn->bias), std::vector<float>(6, 0.0f));
  nn::init::uniform_(gn->weight, 0.5, 2.0);
  nn::init::uniform_(gn->bias, -1.0, 1.0);
  const Tensor x = randn({2, 6, 4, 4});
  const Tensor y = gn(x);
  EXPECT_TRUE(identical(y, group_norm(x, 3, gn->weight, gn->bias, 1e-3)));
  EXPECT_TRUE(identical(
      y, F::group_norm(x, F::GroupNormFuncOptions(3).weight(gn->weight).bias(gn->bias).eps(1e-3))));
  gn->eval();  // the same in evaluation
  EXPECT_TRUE(identical(gn(x), y));
}

TEST(GroupNorm, OptionsPrintingAndChecks) {
  nn::GroupNorm gn(2, 6);
  EXPECT_EQ(printed(*gn), "GroupNorm(2, 6, eps=1e-05, affine=true)");
  nn::GroupNorm plain(nn::GroupNormOptions(2, 4).affine(false));
  EXPECT_TRUE(plain->parameters().empty());
  EXPECT_EQ(printed(*plain), "GroupNorm(2, 4, eps=1e-05, affine=false)");
  EXPECT_TRUE(identical(plain(randn({1, 4, 3}) * 0.0), zeros({1, 4, 3})));
  EXPECT_ERROR_CONTAINS(
      gn(randn({2, 4, 3})),
      "GroupNorm: expected input of shape [N, 6 (num_channels), *], got [2, 4, 3]");
  EXPECT_ERROR_CONTAINS(nn::GroupNorm(4, 6),
                        "GroupNorm: num_channels (6) must be divisible by num_groups (4)");
  EXPECT_ERROR_CONTAINS(nn::GroupNorm(0, 6), "GroupNorm: expected positive num_groups");
  EXPECT_ERROR_CONTAINS(nn::GroupNorm(nn::GroupNormOptions(2, 6).eps(-1)),
                        "GroupNorm: expected eps >= 0, got -1");
}

}  // namespace
}  // namespace minidl
