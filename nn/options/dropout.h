#pragma once
// Options of nn::Dropout and nn::functional::dropout.
#include "minidl/core/arg.h"

namespace minidl::nn {

struct DropoutOptions {
  DropoutOptions(double p = 0.5) : p_(p) {}
  // Probability of zeroing each element, in [0, 1].
  MINIDL_ARG(double, p);
};

// The module takes `training` from its mode; the function is told.
struct DropoutFuncOptions {
  MINIDL_ARG(double, p) = 0.5;
  MINIDL_ARG(bool, training) = true;
};

}  // namespace minidl::nn
