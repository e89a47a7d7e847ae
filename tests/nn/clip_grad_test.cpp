// nn::utils::clip_grad_norm_ and clip_grad_value_ on the CPU, against PyTorch's results
// (tools/reference/make_clip_reference.py prints them) and PyTorch's semantics: skipped parameters,
// the coefficient clamped to 1 yet always applied, non-finite norms, the norm's dtype, and
// gradients that are not dense. No gradient check: clipping is not differentiated.
#include "minidl/nn/utils/clip_grad.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "kernel_table_checks.h"
#include "minidl/nn/utils/clip_grad_kernels.h"
#include "test_util.h"

namespace minidl::nn::utils {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A gradient the test and tools/reference/make_clip_reference.py both fill: element k of one with
// salt s is ((37 k + 11 s) mod 101 - 50) / 16, exact in every dtype.
struct GradSpec {
  Shape shape;
  DType dtype = kFloat32;
  int64_t salt = 0;
};

Tensor parameter_with_grad(const GradSpec& spec) {
  Tensor parameter = zeros(spec.shape, TensorOptions(spec.dtype));
  parameter.requires_grad_(true);
  std::vector<double> values(static_cast<size_t>(shape_numel(spec.shape)));
  for (size_t k = 0; k < values.size(); ++k)
    values[k] =
        static_cast<double>((37 * static_cast<int64_t>(k) + 11 * spec.salt) % 101 - 50) / 16.0;
  parameter.set_grad(tensor(values, spec.shape).to(spec.dtype));
  return parameter;
}

std::vector<Tensor> parameters_of(const std::vector<GradSpec>& specs) {
  std::vector<Tensor> parameters;
  for (const GradSpec& spec : specs) parameters.push_back(parameter_with_grad(spec));
  return parameters;
}

std::vector<Tensor> gradient_copies(const std::vector<Tensor>& parameters) {
  std::vector<Tensor> grads;
  for (const Tensor& parameter : parameters) grads.push_back(parameter.grad().clone());
  return grads;
}

// One case of tools/reference/make_clip_reference.py, with PyTorch 2.15's total norm and
// coefficient.
struct Reference {
  std::string name;
  std::vector<GradSpec> grads;
  double max_norm = 1.0;
  double norm_type = 2.0;
  double norm = 0;
  double coefficient = 0;
  DType norm_dtype = kFloat32;
};

const std::vector<GradSpec> kThreeFloat32 = {
    {{3, 4}, kFloat32, 1}, {{5}, kFloat32, 2}, {{2, 3, 7}, kFloat32, 3}};
const std::vector<GradSpec> kChunks = {{{40000}, kFloat32, 4}, {{17}, kFloat32, 5}};

std::vector<GradSpec> pair_of(DType first, DType second) {
  return {{{3, 4}, first, 1}, {{2, 3, 7}, second, 2}};
}

const std::vector<Reference>& references() {
  static const std::vector<Reference> cases = {
      {"f32_two", kThreeFloat32, 1.0, 2.0, 0x1.bd1a2ep+3, 0x1.2679e4p-4, kFloat32},
      {"f32_inf", kThreeFloat32, 1.0, kInf, 0x1.9p+1, 0x1.47ae0ep-2, kFloat32},
      {"f32_one", kThreeFloat32, 1.0, 1.0, 0x1.73cp+6, 0x1.6094bep-7, kFloat32},
      {"f32_three", kThreeFloat32, 1.0, 3.0, 0x1.ec3336p+2, 0x1.0a4c56p-3, kFloat32},
      {"f32_two_unclipped", kThreeFloat32, 100.0, 2.0, 0x1.bd1a2ep+3, 0x1p+0, kFloat32},
      {"f16_two", pair_of(kFloat16, kFloat16), 1.0, 2.0, 0x1.ad8p+3, 0x1.314p-4, kFloat16},
      {"f16_inf", pair_of(kFloat16, kFloat16), 1.0, kInf, 0x1.88p+1, 0x1.4e4p-2, kFloat16},
      {"bf16_two", pair_of(kBFloat16, kBFloat16), 1.0, 2.0, 0x1.acp+3, 0x1.32p-4, kBFloat16},
      {"f16_bf16_two", pair_of(kFloat16, kBFloat16), 1.0, 2.0, 0x1.ace9dp+3, 0x1.319742p-4,
       kFloat32},
      {"f32_f16_two", pair_of(kFloat32, kFloat16), 0.5, 2.0, 0x1.ad8b6ap+3, 0x1.31244ap-5,
       kFloat32},
      {"f64_f32_two", pair_of(kFloat64, kFloat32), 1.0, 2.0, 0x1.ad94c8d64b772p+3,
       0x1.311da24fcd05p-4, kFloat64},
      {"f32_chunks_two", kChunks, 1.0, 2.0, 0x1.6c80fap+8, 0x1.679718p-9, kFloat32},
      {"f32_chunks_inf", kChunks, 1.0, kInf, 0x1.9p+1, 0x1.47ae0ep-2, kFloat32},
  };
  return cases;
}

// `grad` should be `before` times `coefficient` as PyTorch multiplies: in float (double for
// float64 gradients), rounded to the gradient's dtype.
void expect_scaled(const Tensor& grad, const Tensor& before, double coefficient,
                   const std::string& what) {
  const bool twice = grad.dtype() == kFloat64;
  const std::vector<double> actual = to_vector<double>(grad.to(kFloat64));
  const std::vector<double> original = to_vector<double>(before.to(kFloat64));
  for (size_t i = 0; i < actual.size(); ++i) {
    const double product = twice ? original[i] * coefficient
                                 : static_cast<double>(static_cast<float>(original[i]) *
                                                       static_cast<float>(coefficient));
    const double expected =
        scalar_tensor(product, TensorOptions(kFloat64)).to(grad.dtype()).item<double>();
    ASSERT_EQ(actual[i], expected) << what << ", element " << i;
  }
}

void PrintTo(const Reference& reference, std::ostream* out) { *out << reference.name; }

class ClipGradNormReference : public ::testing::TestWithParam<Reference> {};

// The sums of squares and p-th powers are added in another order than PyTorch's, so those
// norms agree within a few units in the last place of the norm's dtype; maxima (the inf norm)
// and the float16 and bfloat16 norms of these cases come out exactly. The coefficient follows
// from the norm bit for bit, and every gradient is multiplied by it exactly as PyTorch does.
TEST_P(ClipGradNormReference, MatchesPyTorch) {
  const Reference& reference = GetParam();
  const std::vector<Tensor> parameters = parameters_of(reference.grads);
  const std::vector<Tensor> before = gradient_copies(parameters);
  const Tensor total = clip_grad_norm_(parameters, reference.max_norm, reference.norm_type);
  ASSERT_EQ(total.dtype(), reference.norm_dtype);
  ASSERT_TRUE(total.is_cpu());
  ASSERT_EQ(total.numel(), 1);
  const double norm = total.item<double>();
  const bool exact = std::isinf(reference.norm_type) || reference.norm_dtype == kFloat16 ||
                     reference.norm_dtype == kBFloat16;
  if (exact) {
    EXPECT_EQ(norm, reference.norm);
  } else {
    const double ulp = reference.norm_dtype == kFloat64 ? 0x1p-52 : 0x1p-23;
    EXPECT_NEAR(norm, reference.norm, 4 * ulp * reference.norm);
  }
  // The coefficient for the norm as computed (a value of the norm's dtype R, so exact in Acc).
  const double expected_coefficient = visit_floating(reference.norm_dtype, "test", [&](auto zero) {
    using R = decltype(zero);
    return static_cast<double>(
        clip_coefficient<R>(R(static_cast<clip_acc_t<R>>(norm)), reference.max_norm));
  });
  if (exact) EXPECT_EQ(expected_coefficient, reference.coefficient);
  EXPECT_NEAR(expected_coefficient, reference.coefficient, 1e-6 * reference.coefficient);
  for (size_t t = 0; t < parameters.size(); ++t)
    expect_scaled(parameters[t].grad(), before[t], expected_coefficient,
                  reference.name + " gradient " + std::to_string(t));
}

INSTANTIATE_TEST_SUITE_P(ClipGrad, ClipGradNormReference, ::testing::ValuesIn(references()),
                         [](const auto& info) { return info.param.name; });

TEST(ClipGrad, TheCoefficientOneStillLeavesEveryGradientAsItWas) {
  const std::vector<Tensor> parameters = parameters_of(kThreeFloat32);
  const std::vector<Tensor> before = gradient_copies(parameters);
  const uint64_t version = parameters[0].grad().version();
  clip_grad_norm_(parameters, 100.0);
  for (size_t t = 0; t < parameters.size(); ++t)
    EXPECT_TRUE(testing::bitwise_equal(parameters[t].grad(), before[t])) << "gradient " << t;
  // Multiplied in place all the same, as an in-place op would.
  EXPECT_GT(parameters[0].grad().version(), version);
}

TEST(ClipGrad, ParametersWithoutGradientsAreSkipped) {
  std::vector<Tensor> parameters = parameters_of(kThreeFloat32);
  const std::vector<Tensor> with_grads = parameters_of(kThreeFloat32);
  Tensor without = zeros({7}).requires_grad_(true);
  parameters.insert(parameters.begin() + 1, without);
  const Tensor total = clip_grad_norm_(parameters, 1.0);
  const Tensor expected = clip_grad_norm_(with_grads, 1.0);
  EXPECT_TRUE(testing::bitwise_equal(total, expected));
  EXPECT_FALSE(without.grad().defined());
  EXPECT_TRUE(testing::bitwise_equal(parameters[2].grad(), with_grads[1].grad()));
}

TEST(ClipGrad, NoGradientsGiveAFloat32ZeroOnTheCpu) {
  const Tensor total = clip_grad_norm_({zeros({3}).requires_grad_(true)}, 1.0);
  EXPECT_EQ(total.dtype(), kFloat32);
  EXPECT_TRUE(total.is_cpu());
  EXPECT_EQ(total.item<float>(), 0.0f);
  EXPECT_EQ(clip_grad_norm_(std::vector<Tensor>{}, 1.0).item<float>(), 0.0f);
}

TEST(ClipGrad, OneTensorOverloadsMatchTheListForms) {
  const Tensor single = parameter_with_grad({{2, 3, 7}, kFloat32, 3});
  const Tensor in_list = parameter_with_grad({{2, 3, 7}, kFloat32, 3});
  EXPECT_TRUE(testing::bitwise_equal(clip_grad_norm_(single, 0.5, 3.0),
                                     clip_grad_norm_({in_list}, 0.5, 3.0)));
  EXPECT_TRUE(testing::bitwise_equal(single.grad(), in_list.grad()));
  clip_grad_value_(single, 0.01);
  clip_grad_value_({in_list}, 0.01);
  EXPECT_TRUE(testing::bitwise_equal(single.grad(), in_list.grad()));
}

TEST(ClipGrad, ANonFiniteNormIsAnErrorOnlyWhenAskedFor) {
  for (const double bad : {std::numeric_limits<double>::quiet_NaN(), kInf}) {
    const std::vector<Tensor> parameters = parameters_of(kThreeFloat32);
    Tensor grad = parameters[1].grad();
    grad.data_ptr<float>()[2] = static_cast<float>(bad);
    const std::vector<Tensor> before = gradient_copies(parameters);
    EXPECT_ERROR_CONTAINS(clip_grad_norm_(parameters, 1.0, 2.0, /*error_if_nonfinite=*/true),
                          "clip_grad_norm_: the total norm of order 2 of the gradients is " +
                              std::string(std::isnan(bad) ? "nan" : "inf"));
    for (size_t t = 0; t < parameters.size(); ++t)  // the error comes before any change
      EXPECT_TRUE(testing::bitwise_equal(parameters[t].grad(), before[t])) << "gradient " << t;
    // Without the check the gradients are scaled by the coefficient of that norm, as PyTorch's:
    // NaN everywhere for a NaN norm; 0 for an infinite one (and NaN where the gradient was inf).
    const double norm = clip_grad_norm_(parameters, 1.0).item<double>();
    EXPECT_EQ(std::isnan(norm), std::isnan(bad));
    const std::vector<float> first = to_vector<float>(parameters[0].grad());
    EXPECT_TRUE(std::isnan(bad) ? std::isnan(first[0]) : first[0] == 0.0f);
    EXPECT_TRUE(std::isnan(to_vector<float>(parameters[1].grad())[2]));
  }
  // The inf norm of gradients with a NaN is NaN too (amax propagates it).
  const std::vector<Tensor> parameters = parameters_of(kThreeFloat32);
  parameters[2].grad().data_ptr<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(clip_grad_norm_(parameters, 1.0, kInf).item<double>()));
}

TEST(ClipGrad, RejectsNormTypesItDoesNotSupport) {
  const std::vector<Tensor> parameters = parameters_of(kThreeFloat32);
  for (const double order : {0.0, -1.0, -kInf, std::numeric_limits<double>::quiet_NaN()})
    EXPECT_ERROR_CONTAINS(clip_grad_norm_(parameters, 1.0, order),
                          "clip_grad_norm_: expected norm_type > 0 (2, 1, any p > 0, or "
                          "infinity), got ");
  EXPECT_ERROR_CONTAINS(clip_grad_norm_(std::vector<Tensor>{Tensor()}, 1.0),
                        "clip_grad_norm_: parameter 0 is an undefined tensor");
}

// A gradient whose elements do not fill their memory (a slice of a wider tensor) is clipped
// through a dense copy; the rest of its storage stays as it was.
TEST(ClipGrad, GradientsThatAreNotDenseAreClippedInPlace) {
  const std::vector<Tensor> dense = parameters_of({{{4, 3}, kFloat32, 6}});
  Tensor wide = zeros({4, 5});
  wide.narrow(1, 1, 3).copy_(dense[0].grad());
  Tensor sliced = zeros({4, 3}).requires_grad_(true);
  sliced.set_grad(wide.narrow(1, 1, 3));
  ASSERT_EQ(sliced.grad().strides(), (Shape{5, 1}));
  EXPECT_TRUE(testing::bitwise_equal(clip_grad_norm_({sliced}, 1.0), clip_grad_norm_(dense, 1.0)));
  EXPECT_TRUE(testing::bitwise_equal(wide.narrow(1, 1, 3).contiguous(), dense[0].grad()));
  EXPECT_EQ(to_vector<float>(wide.narrow(1, 0, 1).contiguous()), std::vector<float>(4, 0.0f));
  clip_grad_value_({sliced}, 0.01);
  clip_grad_value_(dense, 0.01);
  EXPECT_TRUE(testing::bitwise_equal(wide.narrow(1, 1, 3).contiguous(), dense[0].grad()));
}

// Chunk partials are combined in chunk order, so the thread count changes nothing.
TEST(ClipGrad, TheNormDoesNotDependOnTheThreadCount) {
  const std::vector<GradSpec> specs = {{{300000}, kFloat32, 7}, {{70001}, kFloat16, 8}};
  std::vector<Tensor> norms;
  for (const int64_t threads : {1, 3, 4}) {
    testing::ScopedThreadCount thread_count(threads);
    for (const double order : {2.0, 1.0, 2.5, kInf})
      norms.push_back(clip_grad_norm_(parameters_of(specs), 1.0, order));
  }
  for (size_t i = 4; i < norms.size(); ++i)
    EXPECT_TRUE(testing::bitwise_equal(norms[i], norms[i % 4])) << "norm " << i;
}

TEST(ClipGrad, ValueClampsEveryGradientAndKeepsNaN) {
  for (const auto& [dtype, clip, sum] :
       {std::tuple{kFloat32, 1.0, -0.9375}, std::tuple{kFloat16, 0.1, -0.0374755859375}}) {
    const Tensor parameter = parameter_with_grad({{2, 3, 7}, dtype, 2});
    const std::vector<double> before = to_vector<double>(parameter.grad().to(kFloat64));
    clip_grad_value_({parameter, zeros({2}).requires_grad_(true)}, clip);
    const std::vector<double> after = to_vector<double>(parameter.grad().to(kFloat64));
    const double bound = scalar_tensor(clip, TensorOptions(kFloat64)).to(dtype).item<double>();
    double total = 0;
    for (size_t i = 0; i < after.size(); ++i) {
      EXPECT_EQ(after[i], std::min(std::max(before[i], -bound), bound)) << dtype << " " << i;
      total += after[i];
    }
    EXPECT_EQ(total, sum) << dtype;  // PyTorch's sum of the clamped gradient
  }
  const Tensor parameter = parameter_with_grad({{3}, kFloat32, 1});
  parameter.grad().data_ptr<float>()[1] = std::numeric_limits<float>::quiet_NaN();
  clip_grad_value_(parameter, 0.5);
  EXPECT_TRUE(std::isnan(to_vector<float>(parameter.grad())[1]));
}

TEST(ClipGrad, EveryKernelTableEntryIsSet) {
  testing::expect_complete_tables<ClipGradKernels>("clip_grad");
}

}  // namespace
}  // namespace minidl::nn::utils
