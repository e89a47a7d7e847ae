#include "minidl/nn/init.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/ops/random.h"

namespace minidl::nn::init {

namespace {

void check_defined(const Tensor& tensor, const char* op) {
  MINIDL_CHECK(tensor.defined(), "nn::init::", op, ": the tensor is undefined");
}

double chosen_fan(const Fans& fans, FanMode mode) {
  return static_cast<double>(mode == FanMode::FanIn ? fans.fan_in : fans.fan_out);
}

// The standard normal CDF.
double normal_cdf(double x) { return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))); }

// erf^-1(y): Giles' single-precision polynomial ("Approximating the erfinv function", 2010)
// refined by two Newton steps on std::erf, which leave it exact to double rounding (the
// polynomial's relative error, about 1e-7, is squared by each step); +-1 gives +-infinity.
double inverse_erf(double y) {
  if (y <= -1.0) return -std::numeric_limits<double>::infinity();
  if (y >= 1.0) return std::numeric_limits<double>::infinity();
  double w = -std::log((1.0 - y) * (1.0 + y));
  double p = 0;
  if (w < 5.0) {
    w -= 2.5;
    for (double c : {2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                     -0.00125372503, -0.00417768164, 0.246640727, 1.50140941})
      p = p * w + c;
  } else {
    w = std::sqrt(w) - 3.0;
    for (double c : {-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                     -0.0076224613, 0.00943887047, 1.00167406, 2.83297682})
      p = p * w + c;
  }
  double x = p * y;
  const double two_over_sqrt_pi = 2.0 / std::sqrt(std::acos(-1.0));
  for (int step = 0; step < 2; ++step)
    x -= (std::erf(x) - y) / (two_over_sqrt_pi * std::exp(-x * x));
  return x;
}

}  // namespace

double calculate_gain(Nonlinearity nonlinearity, double param) {
  switch (nonlinearity) {
    case Nonlinearity::Linear:
    case Nonlinearity::Conv1d:
    case Nonlinearity::Conv2d:
    case Nonlinearity::Conv3d:
    case Nonlinearity::ConvTranspose1d:
    case Nonlinearity::ConvTranspose2d:
    case Nonlinearity::ConvTranspose3d:
    case Nonlinearity::Sigmoid: return 1.0;
    case Nonlinearity::Tanh: return 5.0 / 3.0;
    case Nonlinearity::ReLU: return std::sqrt(2.0);
    case Nonlinearity::LeakyReLU: return std::sqrt(2.0 / (1.0 + param * param));
    case Nonlinearity::SELU: return 3.0 / 4.0;
  }
  MINIDL_INTERNAL_ASSERT(false, "unknown nonlinearity");
  return 0.0;
}

Fans calculate_fan_in_and_fan_out(const Tensor& tensor) {
  check_defined(tensor, "calculate_fan_in_and_fan_out");
  MINIDL_CHECK(tensor.dim() >= 2, "nn::init::calculate_fan_in_and_fan_out: fans need a tensor ",
               "of at least 2 dims ([out, in, kernel...]), got shape ", tensor.sizes());
  int64_t receptive_field = 1;
  for (int64_t d = 2; d < tensor.dim(); ++d) receptive_field *= tensor.size(d);
  return Fans{tensor.size(1) * receptive_field, tensor.size(0) * receptive_field};
}

Tensor uniform_(Tensor tensor, double low, double high) {
  check_defined(tensor, "uniform_");
  NoGradGuard no_grad;
  minidl::uniform_(tensor, low, high);
  return tensor;
}

Tensor normal_(Tensor tensor, double mean, double std) {
  check_defined(tensor, "normal_");
  MINIDL_CHECK(std >= 0, "nn::init::normal_: expected std >= 0, got ", std);
  NoGradGuard no_grad;
  minidl::normal_(tensor, mean, std);
  return tensor;
}

Tensor trunc_normal_(Tensor tensor, double mean, double std, double a, double b) {
  check_defined(tensor, "trunc_normal_");
  MINIDL_CHECK(tensor.is_floating_point(), "nn::init::trunc_normal_: expected a floating-point ",
               "tensor, got ", tensor.dtype());
  MINIDL_CHECK(std > 0, "nn::init::trunc_normal_: expected std > 0, got ", std);
  MINIDL_CHECK(a < b, "nn::init::trunc_normal_: expected a < b, got a = ", a, " and b = ", b);
  NoGradGuard no_grad;
  // As PyTorch's: u uniform in [2 Phi(a') - 1, 2 Phi(b') - 1], then mean + std sqrt(2) erfinv(u),
  // clamped to [a, b] against rounding at the ends.
  const double low = 2.0 * normal_cdf((a - mean) / std) - 1.0;
  const double high = 2.0 * normal_cdf((b - mean) / std) - 1.0;
  Tensor values = empty(tensor.sizes(), TensorOptions(kFloat64));
  minidl::uniform_(values, low, high);
  double* value = values.data_ptr<double>();
  for (int64_t i = 0; i < values.numel(); ++i)
    value[i] = std::clamp(mean + std * std::sqrt(2.0) * inverse_erf(value[i]), a, b);
  tensor.copy_(values);
  return tensor;
}

Tensor constant_(Tensor tensor, double value) {
  check_defined(tensor, "constant_");
  NoGradGuard no_grad;
  tensor.fill_(value);
  return tensor;
}

Tensor zeros_(Tensor tensor) { return constant_(std::move(tensor), 0.0); }
Tensor ones_(Tensor tensor) { return constant_(std::move(tensor), 1.0); }

Tensor xavier_uniform_(Tensor tensor, double gain) {
  check_defined(tensor, "xavier_uniform_");
  const Fans fans = calculate_fan_in_and_fan_out(tensor);
  if (tensor.numel() == 0) return tensor;  // nothing to fill, as PyTorch
  const double std = gain * std::sqrt(2.0 / static_cast<double>(fans.fan_in + fans.fan_out));
  const double bound = std::sqrt(3.0) * std;
  return uniform_(std::move(tensor), -bound, bound);
}

Tensor xavier_normal_(Tensor tensor, double gain) {
  check_defined(tensor, "xavier_normal_");
  const Fans fans = calculate_fan_in_and_fan_out(tensor);
  if (tensor.numel() == 0) return tensor;  // nothing to fill, as PyTorch
  const double std = gain * std::sqrt(2.0 / static_cast<double>(fans.fan_in + fans.fan_out));
  return normal_(std::move(tensor), 0.0, std);
}

Tensor kaiming_uniform_(Tensor tensor, double a, FanMode mode, Nonlinearity nonlinearity) {
  check_defined(tensor, "kaiming_uniform_");
  const Fans fans = calculate_fan_in_and_fan_out(tensor);
  if (tensor.numel() == 0) return tensor;  // nothing to fill, as PyTorch
  const double std = calculate_gain(nonlinearity, a) / std::sqrt(chosen_fan(fans, mode));
  const double bound = std::sqrt(3.0) * std;
  return uniform_(std::move(tensor), -bound, bound);
}

Tensor kaiming_normal_(Tensor tensor, double a, FanMode mode, Nonlinearity nonlinearity) {
  check_defined(tensor, "kaiming_normal_");
  const Fans fans = calculate_fan_in_and_fan_out(tensor);
  if (tensor.numel() == 0) return tensor;  // nothing to fill, as PyTorch
  const double std = calculate_gain(nonlinearity, a) / std::sqrt(chosen_fan(fans, mode));
  return normal_(std::move(tensor), 0.0, std);
}

}  // namespace minidl::nn::init
