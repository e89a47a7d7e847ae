#pragma once
// Resampling of the spatial dims, as PyTorch's upsample ops under F.interpolate (the functional
// form with options is nn::functional::interpolate, nn/options/upsampling.h):
// - upsample_nearest1d: [N, C, W] -> [N, C, out_W]; upsample_nearest2d: [N, C, H, W] ->
//   [N, C, out_H, out_W]. Output index o reads source index min(floor(o * scale), in - 1) with
//   scale = 1 / scale_factor when a scale is given, else in / out, in float32 (as PyTorch's
//   "nearest", not "nearest-exact").
// - upsample_bilinear2d: [N, C, H, W] -> [N, C, out_H, out_W], each output the weighted sum of
//   its 2 x 2 source neighbours. Source position s = o * (in - 1) / (out - 1) with
//   align_corners, else max((o + 0.5) * scale - 0.5, 0), scale as above; neighbours floor(s) and
//   floor(s) + 1 (clamped to the edge), weights 1 - frac(s) and frac(s). Positions and weights
//   are float32 (float64 for float64 input), as PyTorch's; float16 and bfloat16 input is
//   computed in float32 and rounded once, as PyTorch's opmath.
// `scales` are the scale factors a user gave (per spatial dim, in order), which enter the
// source-index formula as in PyTorch; std::nullopt means "from the sizes".
//
// Each is a composition of index_select along each spatial dim (and, for bilinear, products
// with the per-position weights), in the order PyTorch's CPU kernel sums: along W, then along
// H. That gives both backends, every floating dtype and a deterministic backward (index_add,
// summed in position order: Note [Deterministic scatter_add] in ops/indexing.cpp). The source
// indices and weights are made on the host and copied to the input's device. A channels-last
// input gives a channels-last result.
#include <optional>
#include <vector>

#include "minidl/core/tensor.h"

namespace minidl {

using InterpolateScales = std::vector<std::optional<double>>;

Tensor upsample_nearest1d(const Tensor& input, const Shape& output_size,
                          const InterpolateScales& scales = {});
Tensor upsample_nearest2d(const Tensor& input, const Shape& output_size,
                          const InterpolateScales& scales = {});
Tensor upsample_bilinear2d(const Tensor& input, const Shape& output_size, bool align_corners,
                           const InterpolateScales& scales = {});

}  // namespace minidl
