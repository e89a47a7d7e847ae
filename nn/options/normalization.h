#pragma once
// Options of nn::LayerNorm and nn::GroupNorm, and of their functional forms.
#include <cstdint>
#include <utility>

#include "minidl/core/arg.h"
#include "minidl/core/tensor.h"

namespace minidl::nn {

struct LayerNormOptions {
  LayerNormOptions(Shape normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}
  // The input's last dims, over which each row is normalised: [C] for [N, L, C] tokens.
  MINIDL_ARG(Shape, normalized_shape);
  // Added to the variance before the square root.
  MINIDL_ARG(double, eps) = 1e-5;
  // Whether to learn a per-element scale (weight) and, with bias, shift of normalized_shape.
  MINIDL_ARG(bool, elementwise_affine) = true;
  // Whether the affine transform has the shift (bias); without elementwise_affine, neither.
  MINIDL_ARG(bool, bias) = true;
};

struct LayerNormFuncOptions {
  LayerNormFuncOptions(Shape normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}
  MINIDL_ARG(Shape, normalized_shape);
  MINIDL_ARG(Tensor, weight) = {};
  MINIDL_ARG(Tensor, bias) = {};
  MINIDL_ARG(double, eps) = 1e-5;
};

struct GroupNormOptions {
  GroupNormOptions(int64_t num_groups, int64_t num_channels)
      : num_groups_(num_groups), num_channels_(num_channels) {}
  // Groups the channels are split into; must divide num_channels.
  MINIDL_ARG(int64_t, num_groups);
  // C, the channel count of the [N, C, *] input.
  MINIDL_ARG(int64_t, num_channels);
  // Added to the variance before the square root.
  MINIDL_ARG(double, eps) = 1e-5;
  // Whether to learn a per-channel scale (weight) and shift (bias).
  MINIDL_ARG(bool, affine) = true;
};

struct GroupNormFuncOptions {
  GroupNormFuncOptions(int64_t num_groups) : num_groups_(num_groups) {}
  MINIDL_ARG(int64_t, num_groups);
  MINIDL_ARG(Tensor, weight) = {};
  MINIDL_ARG(Tensor, bias) = {};
  MINIDL_ARG(double, eps) = 1e-5;
};

namespace functional {
// LibTorch spells them F::LayerNormFuncOptions and F::GroupNormFuncOptions too.
using LayerNormFuncOptions = nn::LayerNormFuncOptions;
using GroupNormFuncOptions = nn::GroupNormFuncOptions;
}  // namespace functional

}  // namespace minidl::nn
