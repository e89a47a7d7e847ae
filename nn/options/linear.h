#pragma once
// Options of nn::Linear.
#include <cstdint>

#include "minidl/core/arg.h"

namespace minidl::nn {

struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}
  MINIDL_ARG(int64_t, in_features);
  MINIDL_ARG(int64_t, out_features);
  // Whether to learn an additive bias.
  MINIDL_ARG(bool, bias) = true;
};

}  // namespace minidl::nn
