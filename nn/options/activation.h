#pragma once
// Options of the activations with a parameter: nn::GELU, nn::LeakyReLU, nn::ELU, nn::Softplus and
// nn::Hardtanh, and their nn::functional forms, and nn::Softmax and nn::LogSoftmax (LibTorch's
// GELUOptions, LeakyReLUOptions, ELUOptions, SoftplusOptions and HardtanhOptions, without
// `inplace`).
#include <cstdint>
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

struct SoftplusOptions {
  // softplus(x) = log(1 + exp(beta * x)) / beta ...
  MINIDL_ARG(double, beta) = 1.0;
  // ... and x itself where beta * x > threshold.
  MINIDL_ARG(double, threshold) = 20.0;
};
using SoftplusFuncOptions = SoftplusOptions;

struct HardtanhOptions {
  // The bounds x is clamped to; the module requires min_val < max_val, as LibTorch's.
  MINIDL_ARG(double, min_val) = -1.0;
  MINIDL_ARG(double, max_val) = 1.0;
};
using HardtanhFuncOptions = HardtanhOptions;

struct SoftmaxOptions {
  // Implicit, as LibTorch's, so nn::Softmax(1) reads as PyTorch's nn.Softmax(dim=1).
  SoftmaxOptions(int64_t dim) : dim_(dim) {}  // NOLINT(google-explicit-constructor)
  // The dim whose entries sum to 1.
  MINIDL_ARG(int64_t, dim);
};

struct LogSoftmaxOptions {
  LogSoftmaxOptions(int64_t dim) : dim_(dim) {}  // NOLINT(google-explicit-constructor)
  // The dim whose entries' exponentials sum to 1.
  MINIDL_ARG(int64_t, dim);
};

}  // namespace minidl::nn
