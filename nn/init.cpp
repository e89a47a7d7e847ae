#include "minidl/nn/init.h"

#include <cmath>
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
