#pragma once
// Options of nn::BatchNorm2d and nn::BatchNorm1d, and of nn::functional::batch_norm.
#include <cstdint>
#include <optional>

#include "minidl/core/arg.h"
#include "minidl/core/tensor.h"

namespace minidl::nn {

struct BatchNorm2dOptions {
  BatchNorm2dOptions(int64_t num_features) : num_features_(num_features) {}
  // C, the channel count of the [N, C, H, W] input ([N, C] or [N, C, L] for BatchNorm1d).
  MINIDL_ARG(int64_t, num_features);
  // Added to the variance before the square root.
  MINIDL_ARG(double, eps) = 1e-5;
  // Weight of the current batch in the running statistics' exponential average; std::nullopt
  // gives the cumulative (equal-weight) average of all batches so far, as PyTorch's None.
  MINIDL_ARG(std::optional<double>, momentum) = 0.1;
  // Whether to learn a per-channel scale (weight) and shift (bias).
  MINIDL_ARG(bool, affine) = true;
  // Whether to keep running_mean / running_var for evaluation; without them evaluation
  // normalises with the batch's own statistics.
  MINIDL_ARG(bool, track_running_stats) = true;
};

// LibTorch's BatchNorm1dOptions and BatchNorm2dOptions are one struct too.
using BatchNorm1dOptions = BatchNorm2dOptions;

struct BatchNormFuncOptions {
  MINIDL_ARG(Tensor, weight) = {};
  MINIDL_ARG(Tensor, bias) = {};
  MINIDL_ARG(bool, training) = false;
  MINIDL_ARG(double, momentum) = 0.1;
  MINIDL_ARG(double, eps) = 1e-5;
};

}  // namespace minidl::nn
