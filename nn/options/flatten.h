#pragma once
// Options of nn::Flatten.
#include <cstdint>

#include "minidl/core/arg.h"

namespace minidl::nn {

// Flattens dims [start_dim, end_dim] into one; the defaults keep the batch dim, as nn.Flatten.
struct FlattenOptions {
  MINIDL_ARG(int64_t, start_dim) = 1;
  MINIDL_ARG(int64_t, end_dim) = -1;
};

}  // namespace minidl::nn
