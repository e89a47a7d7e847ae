#pragma once
// Options of nn::functional::interpolate, as LibTorch's InterpolateFuncOptions:
//   F::interpolate(x, F::InterpolateFuncOptions().scale_factor({2, 2}).mode(minidl::kBilinear)
//                         .align_corners(false))
#include <cstdint>
#include <optional>
#include <vector>

#include "minidl/core/arg.h"

namespace minidl {

// The modes minidl implements ("linear", "bicubic", "trilinear", "area" and "nearest-exact" are
// not there yet).
enum class InterpolateMode { Nearest, Bilinear };
inline constexpr InterpolateMode kNearest = InterpolateMode::Nearest;
inline constexpr InterpolateMode kBilinear = InterpolateMode::Bilinear;

namespace nn {

struct InterpolateFuncOptions {
  // The output's spatial sizes ([W] or [H, W]); exactly one of size and scale_factor is given.
  MINIDL_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  // Per spatial dim (one value stands for every dim); the output size is floor(in * factor).
  MINIDL_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  MINIDL_ARG(InterpolateMode, mode) = InterpolateMode::Nearest;
  // Bilinear only: whether the corner pixels' centres of input and output line up (default
  // false, which PyTorch's bilinear uses when it is not given).
  MINIDL_ARG(std::optional<bool>, align_corners) = std::nullopt;
  // With scale_factor: true computes the source positions from the sizes instead of the factor.
  MINIDL_ARG(std::optional<bool>, recompute_scale_factor) = std::nullopt;
};

namespace functional {
using minidl::nn::InterpolateFuncOptions;  // F::InterpolateFuncOptions, as in LibTorch
}  // namespace functional

}  // namespace nn
}  // namespace minidl
