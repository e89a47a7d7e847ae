#pragma once
// Parameter initialisation, as torch::nn::init: each function fills `tensor` in place (under
// NoGradGuard, so parameters that require grad can be filled) and returns it. Random values come
// from the global Philox generator (minidl::manual_seed), through ops/random.h.
//
// Fans follow PyTorch: for a weight of shape [out, in, k...], fan_in = in * prod(k) and
// fan_out = out * prod(k) (a Linear weight [out, in] has no k). Fans need at least 2 dims; a
// tensor without elements is left as it is, as PyTorch does.
#include <cstdint>

#include "minidl/core/tensor.h"

namespace minidl::nn::init {

// The nonlinearity a layer feeds, for calculate_gain.
enum class Nonlinearity {
  Linear,
  Conv1d,
  Conv2d,
  Conv3d,
  ConvTranspose1d,
  ConvTranspose2d,
  ConvTranspose3d,
  Sigmoid,
  Tanh,
  ReLU,
  LeakyReLU,
  SELU
};

// Whether the kaiming_* functions preserve the variance of the forward pass (FanIn) or of the
// backward pass (FanOut).
enum class FanMode { FanIn, FanOut };

struct Fans {
  int64_t fan_in = 0;
  int64_t fan_out = 0;
};

// The recommended gain for `nonlinearity`, as torch.nn.init.calculate_gain: 1 for linear,
// convolutions and sigmoid, 5/3 for tanh, sqrt(2) for ReLU, sqrt(2 / (1 + slope^2)) for leaky
// ReLU with negative slope `param`, 3/4 for SELU.
double calculate_gain(Nonlinearity nonlinearity, double param = 0.01);
// The fans of a tensor of at least 2 dims.
Fans calculate_fan_in_and_fan_out(const Tensor& tensor);

Tensor uniform_(Tensor tensor, double low = 0, double high = 1);
Tensor normal_(Tensor tensor, double mean = 0, double std = 1);
// The normal distribution N(mean, std^2) truncated to [a, b], as torch.nn.init.trunc_normal_:
// uniform values in [Phi(a'), Phi(b')] (a', b' the standardised bounds) mapped through the
// inverse normal CDF, so every value lies in [a, b] and no draw is rejected; the same seed gives
// the same values on every device and dtype (they are drawn in float64 on the CPU, then copied).
Tensor trunc_normal_(Tensor tensor, double mean = 0, double std = 1, double a = -2, double b = 2);
Tensor constant_(Tensor tensor, double value);
Tensor zeros_(Tensor tensor);
Tensor ones_(Tensor tensor);

// Glorot: std = gain * sqrt(2 / (fan_in + fan_out)); uniform on [-sqrt(3) std, sqrt(3) std].
Tensor xavier_uniform_(Tensor tensor, double gain = 1);
Tensor xavier_normal_(Tensor tensor, double gain = 1);

// He: std = calculate_gain(nonlinearity, a) / sqrt(fan), with fan chosen by `mode`; uniform on
// [-sqrt(3) std, sqrt(3) std]. `a` is the negative slope of a leaky ReLU after the layer.
// (Linear and Conv2d start from kaiming_uniform_(weight, sqrt(5)), i.e. bound 1/sqrt(fan_in).)
Tensor kaiming_uniform_(Tensor tensor, double a = 0, FanMode mode = FanMode::FanIn,
                        Nonlinearity nonlinearity = Nonlinearity::LeakyReLU);
Tensor kaiming_normal_(Tensor tensor, double a = 0, FanMode mode = FanMode::FanIn,
                       Nonlinearity nonlinearity = Nonlinearity::LeakyReLU);

}  // namespace minidl::nn::init
