#pragma once
// Options of the activations with a parameter: nn::LeakyReLU and nn::ELU, and their
// nn::functional forms (LibTorch's LeakyReLUOptions and ELUOptions, without `inplace`).
#include "minidl/core/arg.h"

namespace minidl::nn {

struct LeakyReLUOptions {
  // The slope for x < 0.
  MINIDL_ARG(double, negative_slope) = 0.01;
};
using LeakyReLUFuncOptions = LeakyReLUOptions;

struct ELUOptions {
  // The value approached as x -> -infinity: alpha * (exp(x) - 1) for x <= 0.
  MINIDL_ARG(double, alpha) = 1.0;
};
using ELUFuncOptions = ELUOptions;

}  // namespace minidl::nn
