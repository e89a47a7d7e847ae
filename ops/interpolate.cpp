// PyTorch's upsample ops as index_select along each spatial dim, with PyTorch's source-index
// formulas (aten/src/ATen/native/UpSample.h) evaluated on the host.
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
               spatial == 3   ? ", D, H, W"
               : spatial == 2 ? ", H, W"
                              : ", W",
               "], got shape ", input.sizes());
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

// The source of every output position: PyTorch's nearest_idx ("nearest": floor(o * step)), or
// nearest_neighbor_exact_compute_source_index ("nearest-exact": floor((o + 0.5) * step), the
// pixel whose centre is nearest), in float32 as PyTorch's.
std::vector<int64_t> nearest_sources(int64_t in, int64_t out, std::optional<double> scale,
                                     bool exact) {
  std::vector<int64_t> sources(static_cast<size_t>(out));
  const float step = source_step<float>(scale, in, out);
  for (int64_t o = 0; o < out; ++o) {
    if (!exact && out == in)
      sources[static_cast<size_t>(o)] = o;
    else if (!exact && out == 2 * in)
      sources[static_cast<size_t>(o)] = o >> 1;
    else
      sources[static_cast<size_t>(o)] = std::min(
          static_cast<int64_t>(std::floor((static_cast<float>(o) + (exact ? 0.5f : 0.0f)) * step)),
          in - 1);
  }
  return sources;
}

// Interpolation along one dim: output o is the sum over k of weights[k][o] * x[indices[k][o]],
// added in k's order (two taps for linear, four for cubic).
struct Taps {
  std::vector<std::vector<int64_t>> indices;
  std::vector<std::vector<double>> weights;

  explicit Taps(size_t count) : indices(count), weights(count) {}
  void add(size_t k, int64_t index, double weight) {
    indices[k].push_back(index);
    weights[k].push_back(weight);
  }
};

// PyTorch's area_pixel_compute_scale: the source step per output step.
template <class Real>
Real pixel_step(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  if (align_corners)
    return out > 1 ? static_cast<Real>(in - 1) / static_cast<Real>(out - 1) : Real(0);
  return source_step<Real>(scale, in, out);
}

// PyTorch's compute_source_index_and_lambda, in `Real` (float32, or float64 for float64 input).
template <class Real>
Taps linear_taps(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  Taps taps(2);
  const Real step = pixel_step<Real>(in, out, align_corners, scale);
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
    taps.add(0, first, static_cast<double>(Real(1) - lambda));
    taps.add(1, first + (first < in - 1 ? 1 : 0), static_cast<double>(lambda));
  }
  return taps;
}

// Keys' cubic convolution kernel with parameter A (PyTorch's cubic_convolution1 for |x| <= 1
// and cubic_convolution2 for 1 < |x| < 2): A = -0.75 for bicubic, -0.5 (PIL's) antialiased.
template <class Real>
Real cubic_near(Real x, Real A) {
  return ((A + 2) * x - (A + 3)) * x * x + 1;
}
template <class Real>
Real cubic_far(Real x, Real A) {
  return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
}

// PyTorch's bicubic source position (area_pixel_compute_source_index with cubic: not clamped at
// 0) and get_cubic_upsample_coefficients; the four sources floor(s) - 1 .. floor(s) + 2 are
// clamped to the edge, as its upsample_get_value_bounded.
template <class Real>
Taps cubic_taps(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  Taps taps(4);
  const Real step = pixel_step<Real>(in, out, align_corners, scale);
  for (int64_t o = 0; o < out; ++o) {
    const Real source = align_corners ? step * static_cast<Real>(o)
                                      : step * (static_cast<Real>(o) + Real(0.5)) - Real(0.5);
    const Real floor_source = std::floor(source);
    const auto first = static_cast<int64_t>(floor_source);
    const Real t = source - floor_source;
    constexpr Real A = -0.75;
    const Real coefficients[4] = {cubic_far<Real>(t + 1, A), cubic_near<Real>(t, A),
                                  cubic_near<Real>(1 - t, A), cubic_far<Real>(2 - t, A)};
    for (size_t k = 0; k < 4; ++k)
      taps.add(k, std::clamp<int64_t>(first - 1 + static_cast<int64_t>(k), 0, in - 1),
               static_cast<double>(coefficients[k]));
  }
  return taps;
}

// The antialiasing filters (PyTorch's aa_filter): the triangle for bilinear, Keys' cubic with
// A = -0.5 (PIL's) for bicubic.
template <class Real>
Real antialias_filter(Real x, bool cubic) {
  x = std::abs(x);
  if (!cubic) return x < 1 ? 1 - x : 0;
  constexpr Real A = -0.5;
  if (x < 1) return cubic_near<Real>(x, A);
  if (x < 2) return cubic_far<Real>(x, A);
  return 0;
}

// PyTorch's antialiased taps (_compute_indices_min_size_weights_aa): when shrinking by `step`,
// the filter is widened by it, so that every source pixel under an output pixel counts; the
// weights of each output are normalised to sum to 1. Outputs with fewer taps than the widest
// get zero weights on their first source.
template <class Real>
Taps antialiased_taps(int64_t in, int64_t out, bool align_corners, std::optional<double> scale,
                      bool cubic) {
  const Real step = pixel_step<Real>(in, out, align_corners, scale);
  const Real half_width = cubic ? 2 : 1;
  const Real support = step >= 1 ? half_width * step : half_width;
  const Real inverse_step = step >= 1 ? 1 / step : 1;
  const auto count = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  Taps taps(static_cast<size_t>(count));
  std::vector<Real> weights(static_cast<size_t>(count));
  for (int64_t o = 0; o < out; ++o) {
    const Real center = step * (static_cast<Real>(o) + Real(0.5));
    const int64_t first = std::max<int64_t>(static_cast<int64_t>(center - support + Real(0.5)), 0);
    const int64_t size = std::clamp<int64_t>(
        std::min<int64_t>(static_cast<int64_t>(center + support + Real(0.5)), in) - first, 0,
        count);
    Real total = 0;
    for (int64_t j = 0; j < size; ++j) {
      weights[static_cast<size_t>(j)] = antialias_filter<Real>(
          (static_cast<Real>(j + first) - center + Real(0.5)) * inverse_step, cubic);
      total += weights[static_cast<size_t>(j)];
    }
    for (int64_t j = 0; j < count; ++j) {
      const Real weight = j < size && total != 0 ? weights[static_cast<size_t>(j)] / total : 0;
      taps.add(static_cast<size_t>(j), j < size ? first + j : first, static_cast<double>(weight));
    }
  }
  return taps;
}

// x interpolated along `dim` by `taps`, the weights broadcast along dim.
Tensor interpolate_along(const Tensor& x, int64_t dim, const Taps& taps) {
  const int64_t out = static_cast<int64_t>(taps.indices[0].size());
  Shape weight_shape(static_cast<size_t>(x.dim()), 1);
  weight_shape[static_cast<size_t>(dim)] = out;
  Tensor sum;
  for (size_t k = 0; k < taps.indices.size(); ++k) {
    const Tensor weight = from_host(taps.weights[k].data(), {out}, kFloat64)
                              .to(x.device(), x.dtype())
                              .view(weight_shape);
    const Tensor term = index_select(x, dim, indices_on(taps.indices[k], x.device())) * weight;
    sum = k == 0 ? term : sum + term;
  }
  return sum;
}

bool is_channels_last_only(const Tensor& x) {
  return x.dim() == 4 && !x.is_contiguous() && x.is_contiguous(MemoryFormat::ChannelsLast);
}

Tensor in_input_layout(const Tensor& out, const Tensor& input) {
  return is_channels_last_only(input) ? out.contiguous(MemoryFormat::ChannelsLast) : out;
}

Tensor upsample_nearest(const Tensor& input, const Shape& output_size,
                        const InterpolateScales& scales, int64_t spatial, bool exact,
                        const char* op) {
  const ProfileScope profile(op, {input});
  check_upsample(input, output_size, scales, spatial, op);
  Tensor out = input;
  for (int64_t d = 0; d < spatial; ++d) {
    const auto sd = static_cast<size_t>(d);
    const std::vector<int64_t> sources =
        nearest_sources(input.size(2 + d), output_size[sd], scale_of(scales, sd), exact);
    out = index_select(out, 2 + d, indices_on(sources, input.device()));
  }
  return in_input_layout(out, input);
}

enum class Interpolation { Linear, Cubic, AntialiasedLinear, AntialiasedCubic };

// The taps of `interpolation` along a dim of `in` sources and `out` outputs, in `Real`.
template <class Real>
Taps taps_of(Interpolation interpolation, int64_t in, int64_t out, bool align_corners,
             std::optional<double> scale) {
  switch (interpolation) {
    case Interpolation::Linear: return linear_taps<Real>(in, out, align_corners, scale);
    case Interpolation::Cubic: return cubic_taps<Real>(in, out, align_corners, scale);
    case Interpolation::AntialiasedLinear:
      return antialiased_taps<Real>(in, out, align_corners, scale, false);
    case Interpolation::AntialiasedCubic:
      return antialiased_taps<Real>(in, out, align_corners, scale, true);
  }
  MINIDL_INTERNAL_ASSERT(false, "interpolate: unknown interpolation");
  return Taps(0);
}

// The interpolating modes, along the last spatial dim first, as PyTorch's CPU kernels sum (for
// bilinear: (x00 w0 + x01 w1) h0 + (x10 w0 + x11 w1) h1). Positions and weights are float32
// (float64 for float64 input); float16 and bfloat16 input is interpolated in float32 and rounded
// once, as PyTorch's opmath.
Tensor upsample_interpolating(const Tensor& input, const Shape& output_size, bool align_corners,
                              const InterpolateScales& scales, int64_t spatial,
                              Interpolation interpolation, const char* op) {
  const ProfileScope profile(op, {input});
  check_upsample(input, output_size, scales, spatial, op);
  const bool wide = input.dtype() == kFloat64;
  const bool narrow = input.dtype() == kFloat16 || input.dtype() == kBFloat16;
  Tensor out = narrow ? input.to(kFloat32) : input;
  for (int64_t d = spatial - 1; d >= 0; --d) {
    const auto sd = static_cast<size_t>(d);
    const int64_t in = input.size(2 + d), out_size = output_size[sd];
    const std::optional<double> scale = scale_of(scales, sd);
    const Taps taps = wide ? taps_of<double>(interpolation, in, out_size, align_corners, scale)
                           : taps_of<float>(interpolation, in, out_size, align_corners, scale);
    out = interpolate_along(out, 2 + d, taps);
  }
  if (narrow) out = out.to(input.dtype());
  return in_input_layout(out, input);
}

}  // namespace

Tensor upsample_nearest1d(const Tensor& input, const Shape& output_size,
                          const InterpolateScales& scales) {
  return upsample_nearest(input, output_size, scales, 1, false, "upsample_nearest1d");
}

Tensor upsample_nearest2d(const Tensor& input, const Shape& output_size,
                          const InterpolateScales& scales) {
  return upsample_nearest(input, output_size, scales, 2, false, "upsample_nearest2d");
}

Tensor upsample_nearest3d(const Tensor& input, const Shape& output_size,
                          const InterpolateScales& scales) {
  return upsample_nearest(input, output_size, scales, 3, false, "upsample_nearest3d");
}

Tensor upsample_nearest_exact1d(const Tensor& input, const Shape& output_size,
                                const InterpolateScales& scales) {
  return upsample_nearest(input, output_size, scales, 1, true, "upsample_nearest_exact1d");
}

Tensor upsample_nearest_exact2d(const Tensor& input, const Shape& output_size,
                                const InterpolateScales& scales) {
  return upsample_nearest(input, output_size, scales, 2, true, "upsample_nearest_exact2d");
}

Tensor upsample_nearest_exact3d(const Tensor& input, const Shape& output_size,
                                const InterpolateScales& scales) {
  return upsample_nearest(input, output_size, scales, 3, true, "upsample_nearest_exact3d");
}

Tensor upsample_linear1d(const Tensor& input, const Shape& output_size, bool align_corners,
                         const InterpolateScales& scales) {
  return upsample_interpolating(input, output_size, align_corners, scales, 1, Interpolation::Linear,
                                "upsample_linear1d");
}

Tensor upsample_bilinear2d(const Tensor& input, const Shape& output_size, bool align_corners,
                           const InterpolateScales& scales) {
  return upsample_interpolating(input, output_size, align_corners, scales, 2, Interpolation::Linear,
                                "upsample_bilinear2d");
}

Tensor upsample_trilinear3d(const Tensor& input, const Shape& output_size, bool align_corners,
                            const InterpolateScales& scales) {
  return upsample_interpolating(input, output_size, align_corners, scales, 3, Interpolation::Linear,
                                "upsample_trilinear3d");
}

Tensor upsample_bicubic2d(const Tensor& input, const Shape& output_size, bool align_corners,
                          const InterpolateScales& scales) {
  return upsample_interpolating(input, output_size, align_corners, scales, 2, Interpolation::Cubic,
                                "upsample_bicubic2d");
}

Tensor upsample_bilinear2d_aa(const Tensor& input, const Shape& output_size, bool align_corners,
                              const InterpolateScales& scales) {
  return upsample_interpolating(input, output_size, align_corners, scales, 2,
                                Interpolation::AntialiasedLinear, "upsample_bilinear2d_aa");
}

Tensor upsample_bicubic2d_aa(const Tensor& input, const Shape& output_size, bool align_corners,
                             const InterpolateScales& scales) {
  return upsample_interpolating(input, output_size, align_corners, scales, 2,
                                Interpolation::AntialiasedCubic, "upsample_bicubic2d_aa");
}

}  // namespace minidl
