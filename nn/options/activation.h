#pragma once
// Options of the activations with a parameter: nn::GELU, nn::LeakyReLU and nn::ELU, and their
// nn::functional forms (LibTorch's GELUOptions, LeakyReLUOptions and ELUOptions, without
// `inplace`).
#include <string>

#include "minidl/core/arg.h"

namespace minidl::nn {

struct GELUOptions {
  // "none": x * Phi(x); "tanh": the tanh approximation (GPT-2's).
  MINIDL_ARG(std::string, approximate) = "none";
};
using GELUFuncOptions = GELUOptions;

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
