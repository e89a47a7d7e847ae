// F::interpolate in every mode (nearest, nearest-exact, linear, bilinear, bicubic, trilinear,
// area; with and without align_corners and antialias, sizes and scale factors): PyTorch 2.15's
// values and gradients (tests/ops/shape_ops_reference.h), f64 gradient checks, 16-bit dtypes,
// channels-last layout, and the option errors.
#include "minidl/ops/interpolate.h"

#include <gtest/gtest.h>

#include <type_traits>
#include <vector>

#include "minidl/core/autograd/gradcheck.h"
#include "minidl/nn/functional.h"
#include "reference_entry.h"
#include "shape_ops_reference.h"
#include "test_util.h"

namespace minidl {
namespace {

namespace F = nn::functional;
using testing::ReferenceEntry;

struct InterpolateCase {
  const char* name;
  Shape shape;
  F::InterpolateFuncOptions options;
  const ReferenceEntry& output;
  const ReferenceEntry& grad;
};

using Sizes = std::vector<int64_t>;
using Factors = std::vector<double>;

// The cases of tools/reference/make_shape_ops_reference.py's INTERPOLATE_CASES.
std::vector<InterpolateCase> interpolate_cases() {
  using namespace testing;
  const auto nearest = [](auto size_or_factor) {
    F::InterpolateFuncOptions options;
    if constexpr (std::is_same_v<decltype(size_or_factor), Sizes>)
      options.size(size_or_factor);
    else
      options.scale_factor(size_or_factor);
    return options;
  };
  const auto bilinear = [&](auto size_or_factor) {
    return nearest(size_or_factor).mode(kBilinear);
  };
  const auto in_mode = [&](InterpolateMode mode, auto size_or_factor) {
    return nearest(size_or_factor).mode(mode);
  };
  return {
      {"Nearest2dSize",
       {2, 2, 3, 4},
       nearest(Sizes{5, 7}),
       kInterpolateNearest2dSizeOutput,
       kInterpolateNearest2dSizeGrad0},
      {"Nearest2dDouble",
       {1, 2, 3, 4},
       nearest(Sizes{6, 8}),
       kInterpolateNearest2dDoubleOutput,
       kInterpolateNearest2dDoubleGrad0},
      {"Nearest2dScale",
       {1, 2, 3, 4},
       nearest(Factors{1.7}),
       kInterpolateNearest2dScaleOutput,
       kInterpolateNearest2dScaleGrad0},
      {"Nearest2dDown",
       {1, 2, 5, 7},
       nearest(Sizes{2, 3}),
       kInterpolateNearest2dDownOutput,
       kInterpolateNearest2dDownGrad0},
      {"Nearest1dSize",
       {2, 3, 4},
       nearest(Sizes{7}),
       kInterpolateNearest1dSizeOutput,
       kInterpolateNearest1dSizeGrad0},
      {"Nearest1dScale",
       {2, 3, 4},
       nearest(Factors{2.5}),
       kInterpolateNearest1dScaleOutput,
       kInterpolateNearest1dScaleGrad0},
      {"BilinearSize",
       {2, 2, 3, 4},
       bilinear(Sizes{5, 7}).align_corners(false),
       kInterpolateBilinearSizeOutput,
       kInterpolateBilinearSizeGrad0},
      {"BilinearAlignCorners",
       {2, 2, 3, 4},
       bilinear(Sizes{5, 7}).align_corners(true),
       kInterpolateBilinearAlignCornersOutput,
       kInterpolateBilinearAlignCornersGrad0},
      {"BilinearScale",
       {1, 2, 3, 4},
       bilinear(Factors{1.7}),
       kInterpolateBilinearScaleOutput,
       kInterpolateBilinearScaleGrad0},
      {"BilinearScaleRecomputed",
       {1, 2, 3, 4},
       bilinear(Factors{1.7}).recompute_scale_factor(true),
       kInterpolateBilinearScaleRecomputedOutput,
       kInterpolateBilinearScaleRecomputedGrad0},
      {"BilinearDown",
       {1, 2, 5, 7},
       bilinear(Sizes{2, 3}),
       kInterpolateBilinearDownOutput,
       kInterpolateBilinearDownGrad0},
      {"BilinearAlignCornersOneRow",
       {1, 1, 3, 4},
       bilinear(Sizes{1, 6}).align_corners(true),
       kInterpolateBilinearAlignCornersOneRowOutput,
       kInterpolateBilinearAlignCornersOneRowGrad0},
      {"Nearest3dSize",
       {1, 2, 2, 3, 4},
       nearest(Sizes{3, 5, 3}),
       kInterpolateNearest3dSizeOutput,
       kInterpolateNearest3dSizeGrad0},
      {"NearestExact1dSize",
       {2, 3, 4},
       in_mode(kNearestExact, Sizes{7}),
       kInterpolateNearestExact1dSizeOutput,
       kInterpolateNearestExact1dSizeGrad0},
      {"NearestExact2dScale",
       {1, 2, 3, 4},
       in_mode(kNearestExact, Factors{1.7}),
       kInterpolateNearestExact2dScaleOutput,
       kInterpolateNearestExact2dScaleGrad0},
      {"NearestExact2dDown",
       {1, 2, 5, 7},
       in_mode(kNearestExact, Sizes{2, 3}),
       kInterpolateNearestExact2dDownOutput,
       kInterpolateNearestExact2dDownGrad0},
      {"NearestExact3dSize",
       {1, 2, 2, 3, 4},
       in_mode(kNearestExact, Sizes{3, 5, 3}),
       kInterpolateNearestExact3dSizeOutput,
       kInterpolateNearestExact3dSizeGrad0},
      {"LinearSize",
       {2, 3, 4},
       in_mode(kLinear, Sizes{7}),
       kInterpolateLinearSizeOutput,
       kInterpolateLinearSizeGrad0},
      {"LinearAlignCorners",
       {2, 3, 4},
       in_mode(kLinear, Sizes{7}).align_corners(true),
       kInterpolateLinearAlignCornersOutput,
       kInterpolateLinearAlignCornersGrad0},
      {"LinearScaleDown",
       {1, 2, 9},
       in_mode(kLinear, Factors{0.45}),
       kInterpolateLinearScaleDownOutput,
       kInterpolateLinearScaleDownGrad0},
      {"TrilinearSize",
       {1, 2, 2, 3, 4},
       in_mode(kTrilinear, Sizes{3, 5, 3}),
       kInterpolateTrilinearSizeOutput,
       kInterpolateTrilinearSizeGrad0},
      {"TrilinearAlignCorners",
       {1, 2, 2, 3, 4},
       in_mode(kTrilinear, Sizes{3, 5, 3}).align_corners(true),
       kInterpolateTrilinearAlignCornersOutput,
       kInterpolateTrilinearAlignCornersGrad0},
      {"BicubicSize",
       {2, 2, 3, 4},
       in_mode(kBicubic, Sizes{5, 7}),
       kInterpolateBicubicSizeOutput,
       kInterpolateBicubicSizeGrad0},
      {"BicubicAlignCorners",
       {1, 2, 3, 4},
       in_mode(kBicubic, Sizes{5, 7}).align_corners(true),
       kInterpolateBicubicAlignCornersOutput,
       kInterpolateBicubicAlignCornersGrad0},
      {"BicubicScale",
       {1, 2, 3, 4},
       in_mode(kBicubic, Factors{1.7}),
       kInterpolateBicubicScaleOutput,
       kInterpolateBicubicScaleGrad0},
      {"BicubicDown",
       {1, 2, 7, 9},
       in_mode(kBicubic, Sizes{3, 4}),
       kInterpolateBicubicDownOutput,
       kInterpolateBicubicDownGrad0},
      {"Area1dDown",
       {2, 3, 7},
       in_mode(kArea, Sizes{3}),
       kInterpolateArea1dDownOutput,
       kInterpolateArea1dDownGrad0},
      {"Area2dDown",
       {1, 2, 7, 9},
       in_mode(kArea, Sizes{3, 4}),
       kInterpolateArea2dDownOutput,
       kInterpolateArea2dDownGrad0},
      {"Area2dUpScale",
       {1, 2, 3, 4},
       in_mode(kArea, Factors{1.7}),
       kInterpolateArea2dUpScaleOutput,
       kInterpolateArea2dUpScaleGrad0},
      {"BilinearAntialiasDown",
       {1, 2, 7, 9},
       bilinear(Sizes{3, 4}).antialias(true),
       kInterpolateBilinearAntialiasDownOutput,
       kInterpolateBilinearAntialiasDownGrad0},
      {"BilinearAntialiasScale",
       {1, 2, 9, 8},
       bilinear(Factors{0.3}).antialias(true),
       kInterpolateBilinearAntialiasScaleOutput,
       kInterpolateBilinearAntialiasScaleGrad0},
      {"BilinearAntialiasAlignCorners",
       {1, 2, 7, 9},
       bilinear(Sizes{3, 4}).antialias(true).align_corners(true),
       kInterpolateBilinearAntialiasAlignCornersOutput,
       kInterpolateBilinearAntialiasAlignCornersGrad0},
      {"BilinearAntialiasUp",
       {1, 2, 3, 4},
       bilinear(Sizes{5, 7}).antialias(true),
       kInterpolateBilinearAntialiasUpOutput,
       kInterpolateBilinearAntialiasUpGrad0},
      {"BicubicAntialiasDown",
       {1, 2, 7, 9},
       in_mode(kBicubic, Sizes{3, 4}).antialias(true),
       kInterpolateBicubicAntialiasDownOutput,
       kInterpolateBicubicAntialiasDownGrad0},
      {"BicubicAntialiasMixed",
       {1, 2, 9, 4},
       in_mode(kBicubic, Sizes{4, 6}).antialias(true),
       kInterpolateBicubicAntialiasMixedOutput,
       kInterpolateBicubicAntialiasMixedGrad0},
      {"Area3dDown",
       {1, 2, 5, 6, 7},
       in_mode(kArea, Sizes{2, 4, 3}),
       kInterpolateArea3dDownOutput,
       kInterpolateArea3dDownGrad0},
  };
}

TEST(Interpolate, MatchesPyTorchValuesAndGradients) {
  for (const InterpolateCase& c : interpolate_cases()) {
    EXPECT_TRUE(testing::matches_reference(
        [&](const std::vector<Tensor>& in) { return F::interpolate(in[0], c.options); }, {c.shape},
        c.output, {c.grad}))
        << c.name;
  }
}

TEST(Interpolate, PassesGradcheck) {
  for (const InterpolateCase& c : interpolate_cases()) {
    auto result =
        gradcheck([&](const std::vector<Tensor>& in) { return F::interpolate(in[0], c.options); },
                  {testing::wiggly(c.shape, 0.4, kFloat64).requires_grad_()});
    EXPECT_TRUE(result) << c.name << ": " << result.message;
  }
}

TEST(Interpolate, LowerPrecisionDtypesRoundThePyTorchValuesOnce) {
  for (const InterpolateCase& c : interpolate_cases()) {
    const Tensor expected = testing::reference_tensor(c.output);
    const Tensor x64 = testing::wiggly(c.shape, 0.0, kFloat64);
    EXPECT_TRUE(
        testing::all_close(F::interpolate(x64.to(kFloat32), c.options), expected, 1e-6, 1e-6))
        << c.name << " float32";
    // The 16-bit input is itself rounded, so compare with the float32 result of that input.
    for (DType dtype : {kFloat16, kBFloat16}) {
      const Tensor x = x64.to(dtype);
      const Tensor out = F::interpolate(x, c.options);
      EXPECT_EQ(out.dtype(), dtype);
      EXPECT_TRUE(
          testing::all_close(out, F::interpolate(x.to(kFloat32), c.options).to(dtype), 0, 0))
          << c.name << " " << dtype;
    }
  }
}

TEST(Interpolate, ChannelsLastInputGivesAChannelsLastResult) {
  const Tensor x = testing::wiggly({2, 3, 4, 5});
  const Tensor x_last = x.contiguous(MemoryFormat::ChannelsLast);
  for (const auto& options :
       {F::InterpolateFuncOptions().size(Sizes{7, 3}),
        F::InterpolateFuncOptions().size(Sizes{7, 3}).mode(kBilinear).align_corners(true),
        F::InterpolateFuncOptions().size(Sizes{7, 3}).mode(kBicubic),
        F::InterpolateFuncOptions().size(Sizes{7, 3}).mode(kNearestExact)}) {
    const Tensor out = F::interpolate(x_last, options);
    EXPECT_TRUE(out.is_contiguous(MemoryFormat::ChannelsLast));
    EXPECT_TRUE(testing::bitwise_equal(out, F::interpolate(x, options)));
  }
}

TEST(Interpolate, BadOptionsAreErrors) {
  const Tensor x = zeros({1, 1, 3, 4});
  EXPECT_ERROR_CONTAINS(
      F::interpolate(x, F::InterpolateFuncOptions().size(Sizes{2, 2}).align_corners(true)),
      "interpolate: the align_corners option can only be set with the interpolating modes");
  EXPECT_ERROR_CONTAINS(F::interpolate(x, F::InterpolateFuncOptions()),
                        "interpolate: either size or scale_factor should be given");
  EXPECT_ERROR_CONTAINS(
      F::interpolate(x, F::InterpolateFuncOptions().size(Sizes{2, 2}).scale_factor(Factors{2})),
      "interpolate: only one of size or scale_factor should be given");
  EXPECT_ERROR_CONTAINS(
      F::interpolate(zeros({1, 1, 3}), F::InterpolateFuncOptions().size(Sizes{4}).mode(kBilinear)),
      "interpolate: got a 3-D input of shape [1, 1, 3], but bilinear mode needs a 4-D input");
  EXPECT_ERROR_CONTAINS(F::interpolate(x, F::InterpolateFuncOptions().size(Sizes{4}).mode(kLinear)),
                        "interpolate: got a 4-D input of shape [1, 1, 3, 4], but linear mode "
                        "needs a 3-D input");
  EXPECT_ERROR_CONTAINS(
      F::interpolate(x, F::InterpolateFuncOptions().size(Sizes{4}).mode(kTrilinear)),
      "but trilinear mode needs a 5-D input");
  EXPECT_ERROR_CONTAINS(F::interpolate(zeros({1, 1, 2, 3, 4}),
                                       F::InterpolateFuncOptions().size(Sizes{4}).mode(kBicubic)),
                        "but bicubic mode needs a 4-D input");
  EXPECT_ERROR_CONTAINS(
      F::interpolate(
          x, F::InterpolateFuncOptions().size(Sizes{2, 2}).mode(kArea).align_corners(false)),
      "can only be set with the interpolating modes (linear, bilinear, bicubic, "
      "trilinear), not area");
  EXPECT_ERROR_CONTAINS(
      F::interpolate(x, F::InterpolateFuncOptions().size(Sizes{2, 2}).antialias(true)),
      "interpolate: antialias is only there for the bilinear and bicubic modes, not nearest");
  EXPECT_ERROR_CONTAINS(F::interpolate(x, F::InterpolateFuncOptions().size(Sizes{4, 4, 4})),
                        "interpolate: expected 2 output sizes for an input of shape [1, 1, 3, 4]");
  EXPECT_ERROR_CONTAINS(F::interpolate(x, F::InterpolateFuncOptions().size(Sizes{0, 3})),
                        "upsample_nearest2d: expected input and output sizes greater than 0");
  EXPECT_ERROR_CONTAINS(F::interpolate(zeros({3, 4}), F::InterpolateFuncOptions().size(Sizes{2})),
                        "interpolate: expected a 3-D [N, C, W], 4-D [N, C, H, W] or 5-D "
                        "[N, C, D, H, W] input");
  EXPECT_ERROR_CONTAINS(upsample_bilinear2d(zeros({1, 1, 3, 4}, kInt64), {2, 2}, false),
                        "upsample_bilinear2d: expected a floating-point input, got int64");
  EXPECT_ERROR_CONTAINS(F::interpolate(x, F::InterpolateFuncOptions().scale_factor(Factors{-1})),
                        "interpolate: expected positive scale factors, got -1");
}

}  // namespace
}  // namespace minidl
