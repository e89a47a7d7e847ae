// nn::init: fans, gains, and the bounds and spread of every initialiser.
#include "minidl/nn/init.h"

#include <cmath>
#include <vector>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

namespace init = nn::init;

// Sample mean and standard deviation of all elements.
struct Moments {
  double mean = 0;
  double std = 0;
};
Moments moments_of(const Tensor& t) {
  const std::vector<double> values = to_vector<double>(t);
  double total = 0;
  for (double v : values) total += v;
  const double mean = total / static_cast<double>(values.size());
  double squares = 0;
  for (double v : values) squares += (v - mean) * (v - mean);
  return {mean, std::sqrt(squares / static_cast<double>(values.size() - 1))};
}

// Every element in [-bound, bound], and the extremes close to the bound (the range is used).
void expect_uniform_within(const Tensor& t, double bound) {
  const double largest = max(t).item<double>(), smallest = min(t).item<double>();
  EXPECT_LE(largest, bound);
  EXPECT_GE(smallest, -bound);
  EXPECT_GT(largest, 0.95 * bound);
  EXPECT_LT(smallest, -0.95 * bound);
  // A uniform distribution on [-b, b] has standard deviation b / sqrt(3).
  EXPECT_NEAR(moments_of(t).std, bound / std::sqrt(3.0), 0.03 * bound);
}

TEST(Init, FansFollowPyTorch) {
  const init::Fans linear = init::calculate_fan_in_and_fan_out(empty({10, 784}));
  EXPECT_EQ(linear.fan_in, 784);
  EXPECT_EQ(linear.fan_out, 10);
  const init::Fans conv = init::calculate_fan_in_and_fan_out(empty({64, 3, 5, 7}));
  EXPECT_EQ(conv.fan_in, 3 * 5 * 7);
  EXPECT_EQ(conv.fan_out, 64 * 5 * 7);
  EXPECT_ERROR_CONTAINS(init::calculate_fan_in_and_fan_out(empty({10})),
                        "fans need a tensor of at least 2 dims");
}

TEST(Init, GainsFollowPyTorch) {
  EXPECT_EQ(init::calculate_gain(init::Nonlinearity::Linear), 1.0);
  EXPECT_EQ(init::calculate_gain(init::Nonlinearity::Conv2d), 1.0);
  EXPECT_EQ(init::calculate_gain(init::Nonlinearity::Sigmoid), 1.0);
  EXPECT_DOUBLE_EQ(init::calculate_gain(init::Nonlinearity::Tanh), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(init::calculate_gain(init::Nonlinearity::ReLU), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(init::calculate_gain(init::Nonlinearity::LeakyReLU, 0.2),
                   std::sqrt(2.0 / (1.0 + 0.2 * 0.2)));
  EXPECT_DOUBLE_EQ(init::calculate_gain(init::Nonlinearity::SELU), 0.75);
  // Linear's default, kaiming_uniform_(a = sqrt(5)), has gain sqrt(1/3): bound 1/sqrt(fan_in).
  EXPECT_DOUBLE_EQ(init::calculate_gain(init::Nonlinearity::LeakyReLU, std::sqrt(5.0)),
                   std::sqrt(1.0 / 3.0));
}

TEST(Init, UniformNormalAndConstants) {
  manual_seed(1);
  Tensor t = empty({200, 100});
  init::uniform_(t, -0.5, 0.5);
  expect_uniform_within(t, 0.5);
  init::uniform_(t, 2, 3);
  EXPECT_GE(min(t).item<double>(), 2.0);
  EXPECT_LT(max(t).item<double>(), 3.0);

  init::normal_(t, 1.5, 0.25);
  const Moments normal = moments_of(t);
  EXPECT_NEAR(normal.mean, 1.5, 0.01);
  EXPECT_NEAR(normal.std, 0.25, 0.01);

  init::constant_(t, 0.75);
  EXPECT_EQ(min(t).item<double>(), 0.75);
  EXPECT_EQ(max(t).item<double>(), 0.75);
  init::ones_(t);
  EXPECT_EQ(min(t).item<double>(), 1.0);
  init::zeros_(t);
  EXPECT_EQ(max(abs(t)).item<double>(), 0.0);
}

TEST(Init, XavierUsesBothFans) {
  manual_seed(2);
  Tensor weight = empty({300, 200});
  const double gain = 1.7;
  const double std = gain * std::sqrt(2.0 / (200 + 300));
  init::xavier_uniform_(weight, gain);
  expect_uniform_within(weight, std::sqrt(3.0) * std);
  init::xavier_normal_(weight, gain);
  EXPECT_NEAR(moments_of(weight).std, std, 0.03 * std);
  EXPECT_NEAR(moments_of(weight).mean, 0.0, 0.03 * std);
}

TEST(Init, KaimingUsesTheChosenFanAndGain) {
  manual_seed(3);
  Tensor weight = empty({128, 32, 3, 3});  // fan_in 288, fan_out 1152
  const double fan_in = 32 * 9, fan_out = 128 * 9;

  init::kaiming_uniform_(weight);  // leaky ReLU with slope 0: gain sqrt(2), fan_in
  expect_uniform_within(weight, std::sqrt(3.0) * std::sqrt(2.0) / std::sqrt(fan_in));

  init::kaiming_uniform_(weight, std::sqrt(5.0));
  expect_uniform_within(weight, 1.0 / std::sqrt(fan_in));

  init::kaiming_normal_(weight, 0, init::FanMode::FanOut, init::Nonlinearity::ReLU);
  const double expected_std = std::sqrt(2.0) / std::sqrt(fan_out);
  EXPECT_NEAR(moments_of(weight).std, expected_std, 0.03 * expected_std);

  init::kaiming_normal_(weight, 0, init::FanMode::FanIn, init::Nonlinearity::Tanh);
  const double tanh_std = 5.0 / 3.0 / std::sqrt(fan_in);
  EXPECT_NEAR(moments_of(weight).std, tanh_std, 0.03 * tanh_std);

  // As PyTorch: nothing to fill in a tensor without elements, but the rank is still checked.
  EXPECT_EQ(init::kaiming_uniform_(empty({0, 3})).sizes(), (Shape{0, 3}));
  EXPECT_ERROR_CONTAINS(init::kaiming_normal_(empty({5})), "at least 2 dims");
}

TEST(Init, FillsParametersInPlaceWhileGradModeIsOn) {
  Tensor parameter = empty({4, 4});
  parameter.requires_grad_();
  ASSERT_TRUE(GradMode::is_enabled());
  const void* data = parameter.data_ptr();
  init::kaiming_normal_(parameter);
  init::zeros_(parameter);
  EXPECT_EQ(parameter.data_ptr(), data);
  EXPECT_TRUE(parameter.is_leaf());
  EXPECT_TRUE(parameter.requires_grad());
}

TEST(Init, SameSeedSameValues) {
  Tensor a = empty({8, 8}), b = empty({8, 8});
  manual_seed(7);
  init::xavier_uniform_(a);
  manual_seed(7);
  init::xavier_uniform_(b);
  EXPECT_EQ(to_vector<float>(a), to_vector<float>(b));
}

}  // namespace
}  // namespace minidl
