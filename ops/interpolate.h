#pragma once
// Resampling of the spatial dims, as PyTorch's upsample ops under F.interpolate (the functional
// form with options is nn::functional::interpolate, nn/options/upsampling.h). 1d, 2d and 3d
// take [N, C, W], [N, C, H, W] and [N, C, D, H, W] inputs.
// - upsample_nearest{1,2,3}d ("nearest"): output index o reads source index
//   min(floor(o * scale), in - 1) with scale = 1 / scale_factor when a scale is given, else
//   in / out, in float32.
// - upsample_nearest_exact{1,2,3}d ("nearest-exact"): min(floor((o + 0.5) * scale), in - 1), the
//   source pixel whose centre is nearest (scikit-image's and PIL's choice).
// - upsample_linear1d, upsample_bilinear2d, upsample_trilinear3d: each output the weighted sum of
//   its 2, 2 x 2 or 2 x 2 x 2 source neighbours. Source position s = o * (in - 1) / (out - 1)
//   with align_corners, else max((o + 0.5) * scale - 0.5, 0), scale as above; neighbours
//   floor(s) and floor(s) + 1 (clamped to the edge), weights 1 - frac(s) and frac(s).
// - upsample_bicubic2d: the 4 x 4 source neighbours floor(s) - 1 .. floor(s) + 2 (clamped to
//   the edge) weighted by Keys' cubic convolution with A = -0.75; s as above but not clamped at 0.
// - upsample_bilinear2d_aa, upsample_bicubic2d_aa (antialias=True): when shrinking by a factor
//   f, the triangle (bilinear) or Keys' cubic with A = -0.5 (bicubic) is widened f times around
//   each output's centre f * (o + 0.5), every source pixel under it weighted, the weights
//   normalised to sum to 1 (PIL's resampling); when growing, the same filters unwidened.
// Positions and weights are float32 (float64 for float64 input), as PyTorch's; float16 and
// bfloat16 input is interpolated in float32 and rounded once, as PyTorch's opmath.
// `scales` are the scale factors a user gave (per spatial dim, in order), which enter the
// source-index formula as in PyTorch; std::nullopt means "from the sizes". ("area" is
// adaptive_avg_pool2d: nn::functional::interpolate.)
//
// Each is a composition of index_select along each spatial dim (and, when interpolating,
// products with the per-position weights), along the last spatial dim first, in the order
// PyTorch's CPU kernels sum. That gives both backends, every floating dtype and a deterministic
// backward (index_add, summed in position order: Note [Deterministic scatter_add] in
// ops/indexing.cpp). The source indices and weights are made on the host and copied to the
// input's device. A channels-last input gives a channels-last result.
#include <optional>
#include <vector>

#include "minidl/core/tensor.h"

namespace minidl {

using InterpolateScales = std::vector<std::optional<double>>;

Tensor upsample_nearest1d(const Tensor& input, const Shape& output_size,
                          const InterpolateScales& scales = {});
Tensor upsample_nearest2d(const Tensor& input, const Shape& output_size,
                          const InterpolateScales& scales = {});
Tensor upsample_nearest3d(const Tensor& input, const Shape& output_size,
                          const InterpolateScales& scales = {});
Tensor upsample_nearest_exact1d(const Tensor& input, const Shape& output_size,
                                const InterpolateScales& scales = {});
Tensor upsample_nearest_exact2d(const Tensor& input, const Shape& output_size,
                                const InterpolateScales& scales = {});
Tensor upsample_nearest_exact3d(const Tensor& input, const Shape& output_size,
                                const InterpolateScales& scales = {});
Tensor upsample_linear1d(const Tensor& input, const Shape& output_size, bool align_corners,
                         const InterpolateScales& scales = {});
Tensor upsample_bilinear2d(const Tensor& input, const Shape& output_size, bool align_corners,
                           const InterpolateScales& scales = {});
Tensor upsample_trilinear3d(const Tensor& input, const Shape& output_size, bool align_corners,
                            const InterpolateScales& scales = {});
Tensor upsample_bicubic2d(const Tensor& input, const Shape& output_size, bool align_corners,
                          const InterpolateScales& scales = {});
Tensor upsample_bilinear2d_aa(const Tensor& input, const Shape& output_size, bool align_corners,
                              const InterpolateScales& scales = {});
Tensor upsample_bicubic2d_aa(const Tensor& input, const Shape& output_size, bool align_corners,
                             const InterpolateScales& scales = {});

}  // namespace minidl
