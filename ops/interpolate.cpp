// upsample_nearest1d/2d and upsample_bilinear2d as index_select along each spatial dim, with
// PyTorch's source-index formulas (aten/src/ATen/native/UpSample.h) evaluated on the host.
#include "minidl/ops/interpolate.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "minidl/core/profiler.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/shape.h"

namespace minidl {

namespace {

// Checks the input's rank and dtype and the sizes, for an op over `spatial` trailing dims.
void check_upsample(const Tensor& input, const Shape& output_size, const InterpolateScales& scales,
                    int64_t spatial, const char* op) {
  check_defined(input, op, "input");
  MINIDL_CHECK(input.dim() == spatial + 2, op, ": expected a ", spatial + 2, "-D input [N, C",
               spatial == 2 ? ", H, W" : ", W", "], got shape ", input.sizes());
  MINIDL_CHECK(is_floating_point(input.dtype()), op, ": expected a floating-point input, got ",
               input.dtype());
  MINIDL_CHECK(static_cast<int64_t>(output_size.size()) == spatial, op, ": expected ", spatial,
               " output sizes, got ", output_size);
  MINIDL_CHECK(scales.empty() || static_cast<int64_t>(scales.size()) == spatial, op, ": expected ",
               spatial, " scales or none, got ", scales.size());
  for (int64_t d = 0; d < spatial; ++d) {
    MINIDL_CHECK(input.size(2 + d) > 0 && output_size[static_cast<size_t>(d)] > 0, op,
                 ": expected input and output sizes greater than 0, got input ", input.sizes(),
                 " and output size ", output_size);
  }
}

std::optional<double> scale_of(const InterpolateScales& scales, size_t d) {
  return scales.empty() ? std::nullopt : scales[d];
}

// PyTorch's compute_scales_value: the source step per output step.
template <class Real>
Real source_step(std::optional<double> scale, int64_t in, int64_t out) {
  return scale && *scale > 0 ? static_cast<Real>(1.0 / *scale)
                             : static_cast<Real>(in) / static_cast<Real>(out);
}

Tensor indices_on(const std::vector<int64_t>& indices, Device device) {
  return from_host(indices.data(), {static_cast<int64_t>(indices.size())}, kInt64).to(device);
}

// PyTorch's nearest_idx for every output position.
std::vector<int64_t> nearest_sources(int64_t in, int64_t out, std::optional<double> scale) {
  std::vector<int64_t> sources(static_cast<size_t>(out));
  const float step = source_step<float>(scale, in, out);
  for (int64_t o = 0; o < out; ++o) {
    if (out == in)
      sources[static_cast<size_t>(o)] = o;
    else if (out == 2 * in)
      sources[static_cast<size_t>(o)] = o >> 1;
    else
      sources[static_cast<size_t>(o)] =
          std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * step)), in - 1);
  }
  return sources;
}

// The linear interpolation along one dim: two source indices and their weights per output.
struct LinearTaps {
  std::vector<int64_t> first, second;
  std::vector<double> first_weight, second_weight;
};

// PyTorch's compute_source_index_and_lambda, in `Real` (float32, or float64 for float64 input).
template <class Real>
LinearTaps linear_taps(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  LinearTaps taps;
  Real step;
  if (align_corners)
    step = out > 1 ? static_cast<Real>(in - 1) / static_cast<Real>(out - 1) : Real(0);
  else
    step = source_step<Real>(scale, in, out);
  for (int64_t o = 0; o < out; ++o) {
    int64_t first = o;
    Real lambda = 0;
    if (in != out) {
      Real source = align_corners ? step * static_cast<Real>(o)
                                  : step * (static_cast<Real>(o) + Real(0.5)) - Real(0.5);
      if (!align_corners && source < 0) source = 0;
      first = std::min(static_cast<int64_t>(std::floor(source)), in - 1);
      lambda = std::min(std::max(source - static_cast<Real>(first), Real(0)), Real(1));
    }
    taps.first.push_back(first);
    taps.second.push_back(first + (first < in - 1 ? 1 : 0));
    taps.first_weight.push_back(static_cast<double>(Real(1) - lambda));
    taps.second_weight.push_back(static_cast<double>(lambda));
  }
  return taps;
}

// x interpolated along `dim`: x[first] * w0 + x[second] * w1, the weights broadcast along dim.
Tensor interpolate_linear_along(const Tensor& x, int64_t dim, const LinearTaps& taps) {
  const int64_t out = static_cast<int64_t>(taps.first.size());
  Shape weight_shape(static_cast<size_t>(x.dim()), 1);
  weight_shape[static_cast<size_t>(dim)] = out;
  const Tensor w0 = from_host(taps.first_weight.data(), {out}, kFloat64)
                        .to(x.device(), x.dtype())
                        .view(weight_shape);
  const Tensor w1 = from_host(taps.second_weight.data(), {out}, kFloat64)
                        .to(x.device(), x.dtype())
                        .view(weight_shape);
  return index_select(x, dim, indices_on(taps.first, x.device())) * w0 +
         index_select(x, dim, indices_on(taps.second, x.device())) * w1;
}

bool is_channels_last_only(const Tensor& x) {
  return x.dim() == 4 && !x.is_contiguous() && x.is_contiguous(MemoryFormat::ChannelsLast);
}

Tensor in_input_layout(const Tensor& out, const Tensor& input) {
  return is_channels_last_only(input) ? out.contiguous(MemoryFormat::ChannelsLast) : out;
}

Tensor upsample_nearest(const Tensor& input, const Shape& output_size,
                        const InterpolateScales& scales, int64_t spatial, const char* op) {
  const ProfileScope profile(op, {input});
  check_upsample(input, output_size, scales, spatial, op);
  Tensor out = input;
  for (int64_t d = 0; d < spatial; ++d) {
    const auto sd = static_cast<size_t>(d);
    const std::vector<int64_t> sources =
        nearest_sources(input.size(2 + d), output_size[sd], scale_of(scales, sd));
    out = index_select(out, 2 + d, indices_on(sources, input.device()));
  }
  return in_input_layout(out, input);
}

}  // namespace

Tensor upsample_nearest1d(const Tensor& input, const Shape& output_size,
                          const InterpolateScales& scales) {
  return upsample_nearest(input, output_size, scales, 1, "upsample_nearest1d");
}

Tensor upsample_nearest2d(const Tensor& input, const Shape& output_size,
                          const InterpolateScales& scales) {
  return upsample_nearest(input, output_size, scales, 2, "upsample_nearest2d");
}

Tensor upsample_bilinear2d(const Tensor& input, const Shape& output_size, bool align_corners,
                           const InterpolateScales& scales) {
  const ProfileScope profile("upsample_bilinear2d", {input});
  check_upsample(input, output_size, scales, 2, "upsample_bilinear2d");
  const bool wide = input.dtype() == kFloat64;
  // 16-bit input is interpolated in float32 and rounded once, as PyTorch's opmath.
  const bool narrow = input.dtype() == kFloat16 || input.dtype() == kBFloat16;
  Tensor out = narrow ? input.to(kFloat32) : input;
  // Along W first, then H: PyTorch's CPU kernel sums (x00 w0 + x01 w1) h0 + (x10 w0 + x11 w1) h1.
  for (const int64_t d : {int64_t{1}, int64_t{0}}) {
    const auto sd = static_cast<size_t>(d);
    const int64_t in = input.size(2 + d), out_size = output_size[sd];
    const LinearTaps taps =
        wide ? linear_taps<double>(in, out_size, align_corners, scale_of(scales, sd))
             : linear_taps<float>(in, out_size, align_corners, scale_of(scales, sd));
    out = interpolate_linear_along(out, 2 + d, taps);
  }
  if (narrow) out = out.to(input.dtype());
  return in_input_layout(out, input);
}

}  // namespace minidl
