#pragma once
// Options of nn::functional::interpolate, as LibTorch's InterpolateFuncOptions:
//   F::interpolate(x, F::InterpolateFuncOptions().scale_factor({2, 2}).mode(minidl::kBilinear)
//                         .align_corners(false))
#include <cstdint>
#include <optional>
#include <vector>

#include "minidl/core/arg.h"

namespace minidl {

// F.interpolate's modes: "nearest" and "nearest-exact" (3-D, 4-D and 5-D inputs), "linear"
// (3-D), "bilinear" and "bicubic" (4-D), "trilinear" (5-D) and "area" (adaptive average
// pooling, 3-D to 5-D); antialias with bilinear and bicubic.
enum class InterpolateMode { Nearest, NearestExact, Linear, Bilinear, Bicubic, Trilinear, Area };
inline constexpr InterpolateMode kNearest = InterpolateMode::Nearest;
inline constexpr InterpolateMode kNearestExact = InterpolateMode::NearestExact;
inline constexpr InterpolateMode kLinear = InterpolateMode::Linear;
inline constexpr InterpolateMode kBilinear = InterpolateMode::Bilinear;
inline constexpr InterpolateMode kBicubic = InterpolateMode::Bicubic;
inline constexpr InterpolateMode kTrilinear = InterpolateMode::Trilinear;
inline constexpr InterpolateMode kArea = InterpolateMode::Area;

// "nearest", "nearest-exact", "linear", ... as PyTorch spells the mode.
const char* interpolate_mode_name(InterpolateMode mode);

namespace nn {

struct InterpolateFuncOptions {
  // The output's spatial sizes ([W], [H, W] or [D, H, W]); exactly one of size and scale_factor
  // is given.
  MINIDL_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  // Per spatial dim (one value stands for every dim); the output size is floor(in * factor).
  MINIDL_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  MINIDL_ARG(InterpolateMode, mode) = InterpolateMode::Nearest;
  // The interpolating modes only (linear, bilinear, bicubic, trilinear): whether the corner
  // pixels' centres of input and output line up (default false, as PyTorch's when not given).
  MINIDL_ARG(std::optional<bool>, align_corners) = std::nullopt;
  // Bilinear and bicubic only: when shrinking, widen the filter so that every source pixel
  // counts (PIL's resampling), as PyTorch's antialias=True.
  MINIDL_ARG(bool, antialias) = false;
  // With scale_factor: true computes the source positions from the sizes instead of the factor.
  MINIDL_ARG(std::optional<bool>, recompute_scale_factor) = std::nullopt;
};

namespace functional {
using minidl::nn::InterpolateFuncOptions;  // F::InterpolateFuncOptions, as in LibTorch
}  // namespace functional

}  // namespace nn
}  // namespace minidl
