// The ops that promote, against PyTorch 2.15: each expression of kPromotionOpReferences
// (tests/ops/promotion_reference.h, from tools/reference/make_promotion_reference.py) written in
// C++, with the dtype, sizes and values PyTorch gives, or the error where PyTorch raises. Scalars
// promote by their C++ type (core/scalar.h), tensor({...}) infers its dtype as LibTorch's, and
// atan2, fmod, remainder and clamp with tensor bounds promote their operands; the gradients of
// the promoted ops are checked in float64.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "minidl/core/autograd/gradcheck.h"
#include "minidl/ops/closeness.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/linalg.h"
#include "promotion_reference.h"
#include "test_util.h"

namespace minidl {
namespace {

// The operands of the reference script's OP_CASES.
struct Operands {
  Tensor i64 = tensor({1, -2, 3});
  Tensor i32 = tensor({7, -7, 5}, kInt32);
  Tensor u8 = tensor({7, 3, 250}, kUInt8);
  Tensor b = tensor({true, false, true});
  Tensor h = tensor({0.5, -1.5, 2.0}, kFloat16);
  Tensor f = tensor({1.5, -2.5, 0.25});
  Tensor d = tensor({0.5, 2.0, -1.0}, kFloat64);
  Tensor dividend = tensor({-7, 7, -7, 7, 0, 5});
  Tensor divisor = tensor({2, 2, -2, -2, 3, -1});
  Tensor zero_divisor = tensor({2, 0, 1, 1, 1, 1});
  Tensor m32 = ones({2, 2});
  Tensor m64 = ones({2, 2}, kFloat64);
};

struct Case {
  std::function<Tensor(const Operands&)> run;
  std::string error = {};  // what the minidl::Error says, where PyTorch raises
};

std::map<std::string, Case> cases() {
  using O = const Operands&;
  return {
      {"tensor({1, 2, 3})", {[](O) {
         return tensor({1, 2, 3});
       }}},
      {"tensor({1.0, 2.0})", {[](O) {
         return tensor({1.0, 2.0});
       }}},
      {"tensor({1.5f, 2.5f})", {[](O) {
         return tensor({1.5f, 2.5f});
       }}},
      {"tensor({true, false})", {[](O) {
         return tensor({true, false});
       }}},
      {"tensor({1, 2.5})", {[](O) {
         return tensor({1, 2.5});
       }}},
      {"tensor({{1, 2}, {3, 4}})", {[](O) {
         return tensor({{1, 2}, {3, 4}});
       }}},
      {"tensor({{1.5, 2.0}})", {[](O) {
         return tensor({{1.5, 2.0}});
       }}},
      {"tensor({{{1, 2}, {3, 4}}})", {[](O) {
         return tensor({{{1, 2}, {3, 4}}});
       }}},
      {"tensor({{{1.5, 2.0}}, {{3.0, 4.0}}})", {[](O) {
         return tensor({{{1.5, 2.0}}, {{3.0, 4.0}}});
       }}},
      {"tensor({{{true}}, {{false}}})", {[](O) {
         return tensor({{{true}}, {{false}}});
       }}},
      {"tensor({{{{1, 2}}, {{3, 4}}}})", {[](O) {
         return tensor({{{{1, 2}}, {{3, 4}}}});
       }}},
      {"tensor({{{{1, 2}}}}, kFloat64)", {[](O) {
         return tensor({{{{1, 2}}}}, kFloat64);
       }}},
      {"tensor({{{1, 2}, {3}}}) (ragged)",
       {[](O) {
          return tensor({{{1, 2}, {3}}});
        },
        "tensor: expected a list of length 2 at dim 2 (as the first list there), got one of "
        "length 1: the lists of a nested list must not be ragged"}},
      {"tensor({{{1, 2}}, {{1, 2}, {3, 4}}}) (ragged)",
       {[](O) {
          return tensor({{{1, 2}}, {{1, 2}, {3, 4}}});
        },
        "tensor: expected a list of length 1 at dim 1 (as the first list there), got one of "
        "length 2"}},
      {"tensor({{{{1}}, {{2}}}, {{{3}}}}) (ragged)",
       {[](O) {
          return tensor({{{{1}}, {{2}}}, {{{3}}}});
        },
        "tensor: expected a list of length 2 at dim 1 (as the first list there), got one of "
        "length 1"}},
      {"arange(5)", {[](O) { return arange(5); }}},
      {"arange(24.0)", {[](O) { return arange(24.0); }}},
      {"arange(0.0, 1.0, 0.25)", {[](O) { return arange(0.0, 1.0, 0.25); }}},
      {"arange(0, 1, 0.25)", {[](O) { return arange(0, 1, 0.25); }}},
      {"arange(1, 2.5)", {[](O) { return arange(1, 2.5); }}},
      {"arange(-1.5, 1, 0.5)", {[](O) { return arange(-1.5, 1, 0.5); }}},
      {"arange(10, 0, -3)", {[](O) { return arange(10, 0, -3); }}},
      {"arange(5, kFloat64)", {[](O) { return arange(5, kFloat64); }}},
      {"arange(0, 1, 0.25, kInt64)", {[](O) { return arange(0, 1, 0.25, kInt64); }}},
      {"arange(0.1, 0.9, 0.1)", {[](O) { return arange(0.1, 0.9, 0.1); }}},
      {"tensor(3)", {[](O) { return tensor(3); }}},
      {"tensor(2.5)", {[](O) { return tensor(2.5); }}},
      {"tensor({1, 2}, kFloat64)", {[](O) {
         return tensor({1, 2}, kFloat64);
       }}},
      {"int64 + 2.0", {[](O o) { return o.i64 + 2.0; }}},
      {"int64 + 2", {[](O o) { return o.i64 + 2; }}},
      {"float16 + 2.0", {[](O o) { return o.h + 2.0; }}},
      {"float16 + 2", {[](O o) { return o.h + 2; }}},
      {"bool + 1", {[](O o) { return o.b + 1; }}},
      {"bool + 1.0", {[](O o) { return o.b + 1.0; }}},
      {"bool + true", {[](O o) { return o.b + true; }}},
      {"bool + false", {[](O o) { return o.b + false; }}},
      {"true + bool", {[](O o) { return true + o.b; }}},
      {"bool * true", {[](O o) { return o.b * true; }}},
      {"bool * false", {[](O o) { return o.b * false; }}},
      {"bool + bool", {[](O o) { return o.b + o.b.flip({0}); }}},
      {"bool * bool", {[](O o) { return o.b * o.b.flip({0}); }}},
      {"bool - true", {[](O o) { return o.b - true; }, "sub: expected a numeric tensor"}},
      {"2.0 - int64", {[](O o) { return 2.0 - o.i64; }}},
      {"2 - int64", {[](O o) { return 2 - o.i64; }}},
      {"int64 - 1.0", {[](O o) { return o.i64 - 1.0; }}},
      {"int64 * 0.5", {[](O o) { return o.i64 * 0.5; }}},
      {"int64 * 2", {[](O o) { return o.i64 * 2; }}},
      {"0.5 * int32", {[](O o) { return 0.5 * o.i32; }}},
      {"int64 / 2", {[](O o) { return o.i64 / 2; }}},
      {"2 / int64", {[](O o) { return 2 / o.i64; }}},
      {"uint8 + 300", {[](O o) { return o.u8 + 300; }}},
      {"int64 < 2.5", {[](O o) { return o.i64 < 2.5; }}},
      {"int64 == 3.0", {[](O o) { return o.i64 == 3.0; }}},
      {"2.5 > int32", {[](O o) { return 2.5 > o.i32; }}},
      {"pow(int64, 0.5)", {[](O o) { return pow(o.i64, 0.5); }}},
      {"pow(int64, 2)", {[](O o) { return pow(o.i64, 2); }}},
      {"pow(int64, 2.0)", {[](O o) { return pow(o.i64, 2.0); }}},
      {"pow(int32, 3)", {[](O o) { return o.i32.pow(3); }}},
      {"pow(bool, 2)", {[](O o) { return pow(o.b, 2); }}},
      {"pow(float16, 2)", {[](O o) { return pow(o.h, 2); }}},
      {"pow(int64, -1)",
       {[](O o) { return pow(o.i64, -1); }, "pow: integers to negative integer powers"}},
      {"clamp(int64, 0.5)", {[](O o) { return clamp(o.i64, 0.5, std::nullopt); }}},
      {"clamp(int64, 0, 2)", {[](O o) { return clamp(o.i64, 0, 2); }}},
      {"clamp(int64, nullopt, 1.5)", {[](O o) { return clamp(o.i64, std::nullopt, 1.5); }}},
      {"clamp_min(int32, 0.5)", {[](O o) { return clamp_min(o.i32, 0.5); }}},
      {"clamp_max(int32, 2)", {[](O o) { return clamp_max(o.i32, 2); }}},
      {"clamp(int64, float32 min)",
       {[](O o) { return clamp(o.i64, full({3}, 0.5), std::optional<Tensor>()); }}},
      {"int64.clamp(0, 2)", {[](O o) { return o.i64.clamp(0, 2); }}},
      {"int64.clamp(0.5)", {[](O o) { return o.i64.clamp(0.5); }}},
      {"float32.clamp(nullopt, 1)", {[](O o) { return o.f.clamp(std::nullopt, 1); }}},
      {"float32.clamp(int64 min)", {[](O o) {
         return o.f.clamp(tensor({2, 0, 0}));
       }}},
      {"int64.clamp(nullopt, float32 max)",
       {[](O o) { return o.i64.clamp(std::nullopt, full({3}, 0.5)); }}},
      {"int64.clamp_min(float32 0-d)", {[](O o) { return o.i64.clamp_min(tensor(0.5)); }}},
      {"float32.clamp_max(1)", {[](O o) { return o.f.clamp_max(1); }}},
      {"int64.clamp_(0, 2)", {[](O o) { return o.i64.clone().clamp_(0, 2); }}},
      {"int64.clamp_(0.5)",
       {[](O o) { return o.i64.clone().clamp_(0.5); },
        "clamp_: the result type float32 (with the floating-point scalar 0.5) cannot be written "
        "into this int64 tensor"}},
      {"float16.clamp_(-1, 1.5)", {[](O o) { return o.h.clone().clamp_(-1, 1.5); }}},
      {"float32.clamp_(int64 min)", {[](O o) {
         return o.f.clone().clamp_(tensor({2, 0, 0}));
       }}},
      {"int64.clamp_(float32 min)",
       {[](O o) { return o.i64.clone().clamp_(full({3}, 0.5)); },
        "clamp_: the result type float32 cannot be written into this int64 tensor"}},
      {"float32.clamp_(nullopt, max of shape [2, 3])",
       {[](O o) {
          return o.f.clone().clamp_(std::nullopt, zeros({2, 3}));
        },
        "clamp_: bounds that broadcast with this tensor to the shape [2, 3] cannot be applied in "
        "place to its shape [3]"}},
      {"int32.clamp_min_(int64 0-d)", {[](O o) { return o.i32.clone().clamp_min_(tensor(0)); }}},
      {"int32.clamp_max_(2)", {[](O o) { return o.i32.clone().clamp_max_(2); }}},
      {"isclose(uint8, uint8, atol 1)", {[](O o) {
         return isclose(o.u8, tensor({8, 5, 1}, kUInt8), 1e-5, 1.0);
       }}},
      {"isclose(bool, bool)", {[](O o) {
         return o.b.isclose(tensor({true, true, false}));
       }}},
      {"isclose(int64, int64, rtol 0.5)", {[](O o) {
         return isclose(o.i64, tensor({3, -3, 3}), 0.5);
       }}},
      {"isclose(float16, float16, rtol 1e-3)",
       {[](O o) { return isclose(o.h, o.h + 0.001, 1e-3); }}},
      {"isclose(float32, float64)",
       {[](O o) { return isclose(o.f, o.d); },
        "isclose: expected both tensors to have one dtype, got float32 and float64"}},
      {"isclose(float32, float32, rtol -1)",
       {[](O o) { return isclose(o.f, o.f, -1.0); }, "isclose: expected rtol >= 0, got -1"}},
      {"equal(int64, float32)", {[](O o) { return tensor(equal(o.i64, o.i64.to(kFloat32))); }}},
      {"equal(float32, float32 of shape [1, 3])",
       {[](O o) { return tensor(o.f.equal(o.f.unsqueeze(0))); }}},
      {"allclose(int32, int32, atol 1)", {[](O o) {
         return tensor(allclose(o.i32, o.i32 + tensor({1, 0, -1}, kInt32), 1e-5, 1.0));
       }}},
      {"allclose(float16, float32)",
       {[](O o) { return tensor(o.h.allclose(o.f)); },
        "allclose: expected both tensors to have one dtype, got float16 and float32"}},
      {"clamp(float32, int64 min)", {[](O o) {
         return clamp(o.f, tensor({2, 0, 0}), std::optional<Tensor>());
       }}},
      {"clamp(int32, int64 0-d min, float64 0-d max)",
       {[](O o) { return clamp(o.i32, tensor(0), tensor(5.5, kFloat64)); }}},
      {"atan2(int64, int64)", {[](O o) { return atan2(o.i64, o.i64.flip({0})); }}},
      {"atan2(float32, float64)", {[](O o) { return atan2(o.f, o.d); }}},
      {"atan2(bool, bool)", {[](O o) { return atan2(o.b, o.b.flip({0})); }}},
      {"atan2(int32, float16)", {[](O o) { return o.i32.atan2(o.h); }}},
      {"fmod(int64, int64)", {[](O o) { return fmod(o.dividend, o.divisor); }}},
      {"remainder(int64, int64)", {[](O o) { return remainder(o.dividend, o.divisor); }}},
      {"fmod(int32, int32)",
       {[](O o) { return fmod(o.dividend.to(kInt32), o.divisor.to(kInt32)); }}},
      {"remainder(int32, int32)",
       {[](O o) { return remainder(o.dividend.to(kInt32), o.divisor.to(kInt32)); }}},
      {"fmod(uint8, uint8)", {[](O o) {
         return fmod(o.u8, tensor({2, 5, 7}, kUInt8));
       }}},
      {"remainder(uint8, uint8)", {[](O o) {
         return remainder(o.u8, tensor({2, 5, 7}, kUInt8));
       }}},
      {"fmod(int32, uint8)", {[](O o) { return fmod(o.i32, o.u8); }}},
      {"remainder(int64, int32)",
       {[](O o) { return remainder(o.dividend, o.divisor.to(kInt32)); }}},
      {"fmod(int64, 2)", {[](O o) { return fmod(o.dividend, 2); }}},
      {"remainder(int64, -3)", {[](O o) { return o.dividend.remainder(-3); }}},
      {"fmod(int64, 1.5)", {[](O o) { return o.dividend.fmod(1.5); }}},
      {"remainder(int64, 1.5)", {[](O o) { return remainder(o.dividend, 1.5); }}},
      {"fmod(float32, int64)", {[](O o) { return fmod(o.f, o.i64); }}},
      {"remainder(float16, float32)", {[](O o) { return remainder(o.h, o.f); }}},
      {"remainder(int64, float64)",
       {[](O o) { return remainder(o.dividend.narrow(0, 0, 3), o.d); }}},
      {"fmod(int64, 0)",
       {[](O o) { return fmod(o.dividend, 0); },
        "fmod: ZeroDivisionError: an integer (int64) divisor holds 0"}},
      {"remainder(int64, int64 with 0)",
       {[](O o) { return remainder(o.dividend, o.zero_divisor); },
        "remainder: ZeroDivisionError: an integer (int64) divisor holds 0"}},
      {"fmod(bool, bool)", {[](O o) { return fmod(o.b, o.b); }, "fmod: expected a numeric tensor"}},
      {"maximum(int64, float32)", {[](O o) { return maximum(o.i64, o.f); }}},
      {"minimum(bool, int32)", {[](O o) { return minimum(o.b, o.i32); }}},
      {"where(c, int64, 2.5)", {[](O o) { return where(o.b, o.i64, 2.5); }}},
      {"where(c, int64, 2)", {[](O o) { return where(o.b, o.i64, 2); }}},
      {"where(c, 2.0, int32)", {[](O o) { return where(o.b, 2.0, o.i32); }}},
      {"where(c, float16, float32)", {[](O o) { return where(o.b, o.h, o.f); }}},
      {"matmul(float32, float64)",
       {[](O o) { return matmul(o.m32, o.m64); },
        "matmul: expected operands of the same dtype, got float32 and float64"}},
      {"bmm(float32, float16)",
       {[](O o) { return bmm(o.m32.unsqueeze(0), o.m64.unsqueeze(0).to(kFloat16)); },
        "bmm: expected operands of the same dtype, got float32 and float16"}},
      {"addmm(float32, float32, float64)",
       {[](O o) { return addmm(o.m32, o.m32, o.m64); },
        "addmm: expected operands of the same dtype, got float32 and float64"}},
      {"int64.add_(2.0)",
       {[](O o) { return o.i64.clone().add_(2.0); },
        "add_: the result type float32 (with the floating-point scalar 2) cannot be written "
        "into this int64 tensor"}},
      {"int64.mul_(3)", {[](O o) { return o.i64.clone().mul_(3); }}},
      {"float16.mul_(2.5)", {[](O o) { return o.h.clone().mul_(2.5); }}},
  };
}

// float16's and float32's results are compared to their precision; the rest exactly.
double tolerance(DType dtype) {
  if (dtype == kFloat16) return 1e-3;
  if (dtype == kFloat32) return 1e-6;
  return 0;
}

TEST(PromotionOps, EveryReferenceCaseHasItsExpression) {
  const std::map<std::string, Case> expressions = cases();
  EXPECT_EQ(expressions.size(), testing::kPromotionOpReferences.size());
  for (const testing::PromotionOpReference& reference : testing::kPromotionOpReferences)
    EXPECT_TRUE(expressions.count(std::string(reference.name))) << reference.name;
}

TEST(PromotionOps, DtypesValuesAndErrorsMatchPyTorch) {
  const std::map<std::string, Case> expressions = cases();
  const Operands operands;
  for (const testing::PromotionOpReference& reference : testing::kPromotionOpReferences) {
    SCOPED_TRACE(std::string(reference.name));
    const auto found = expressions.find(std::string(reference.name));
    ASSERT_NE(found, expressions.end());
    const Case& expression = found->second;
    if (reference.raises) {
      ASSERT_FALSE(expression.error.empty()) << "PyTorch raises here; say what minidl says";
      EXPECT_ERROR_CONTAINS(expression.run(operands), expression.error);
      continue;
    }
    ASSERT_TRUE(expression.error.empty()) << "PyTorch does not raise here";
    const Tensor result = expression.run(operands);
    EXPECT_EQ(result.dtype(), reference.dtype);
    EXPECT_EQ(result.sizes(), reference.sizes);
    const std::vector<double> values = to_vector<double>(result);
    ASSERT_EQ(values.size(), reference.values.size());
    for (size_t k = 0; k < values.size(); ++k) {
      if (std::isnan(reference.values[k])) {
        EXPECT_TRUE(std::isnan(values[k])) << "element " << k;
        continue;
      }
      EXPECT_NEAR(values[k], reference.values[k],
                  tolerance(reference.dtype) * (1 + std::abs(reference.values[k])))
          << "element " << k;
    }
  }
}

TEST(PromotionOps, TensorListsNeedOneRowLengthAndIntegersCannotRequireGrad) {
  EXPECT_ERROR_CONTAINS(tensor({{1, 2}, {3}}),
                        "tensor: expected a list of length 2 at dim 1 (as the first list there), "
                        "got one of length 1");
  EXPECT_ERROR_CONTAINS(tensor({1, 2}, TensorOptions().requires_grad()), "int64");
  EXPECT_TRUE(tensor({1, 2}, TensorOptions().dtype(kFloat32).requires_grad()).requires_grad());
  EXPECT_EQ(tensor({3u, 4u}).dtype(), kInt64);
  EXPECT_EQ(tensor({uint8_t{3}}).dtype(), kUInt8);  // as LibTorch's, uint8_t stays uint8
  EXPECT_EQ(tensor(true).dtype(), kBool);
  EXPECT_EQ(tensor(true).dim(), 0);
}

// The promoted ops are differentiable in their floating operands; an integer operand is a
// constant there.
TEST(PromotionOps, GradcheckThroughPromotedOperands) {
  const Tensor ints = tensor({3, -2, 5, 4});
  const Tensor x = testing::wiggly({4}, 0.3, kFloat64).mul(3.0).requires_grad_();
  const Tensor y = testing::wiggly({4}, 1.1, kFloat64).add(7.0).requires_grad_();
  const GradcheckResult result = gradcheck(
      [&](const std::vector<Tensor>& in) {
        return atan2(in[0], ints) + atan2(ints, in[1]) + fmod(in[0], ints) +
               remainder(ints, in[1]) + clamp(in[0], ints.to(kInt32) - 4, in[1]) +
               clamp(in[0], -1, 2.5) + pow(in[1], 3) * 0.01;
      },
      {x, y});
  EXPECT_TRUE(result) << result.message;
}

}  // namespace
}  // namespace minidl
