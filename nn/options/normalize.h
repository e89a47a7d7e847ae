#pragma once
// Options of nn::functional::normalize, LibTorch's NormalizeFuncOptions.
#include <cstdint>

#include "minidl/core/arg.h"

namespace minidl::nn {

struct NormalizeFuncOptions {
  // The exponent of the norm (2: Euclidean).
  MINIDL_ARG(double, p) = 2.0;
  // The dim the norm is taken over (each vector along it is scaled to norm 1).
  MINIDL_ARG(int64_t, dim) = 1;
  // The smallest norm divided by, so that a zero vector stays zero.
  MINIDL_ARG(double, eps) = 1e-12;
};

namespace functional {
// LibTorch spells it F::NormalizeFuncOptions too.
using nn::NormalizeFuncOptions;
}  // namespace functional

}  // namespace minidl::nn
