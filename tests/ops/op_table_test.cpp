// The operator table (tests/ops/op_table.h) on the CPU: for every row, unary and binary, PyTorch's
// values in each dtype and its float64 gradients (tests/ops/op_reference.h), a central-difference
// gradient check (broadcasting, for the binary rows), the same bits in every layout (contiguous,
// channels-last, strided, empty), and the errors for operands of the wrong dtype or shape.
#include "op_table.h"

#include <gtest/gtest.h>

#include <string>

#include "minidl/core/autograd/gradcheck.h"
#include "minidl/minidl.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::BinaryReference;
using testing::BinaryRow;
using testing::kOpReferenceCount;
using testing::reference_tensor;
using testing::UnaryReference;
using testing::UnaryRow;

// Tolerances against PyTorch: both compute in float (the 16-bit types too) or double with a
// libm of at most an ulp or two of error and round once, so they agree to a few ulps of the
// computing type, and to one ulp of a 16-bit result.
struct Tolerance {
  double atol, rtol;
};
Tolerance tolerance(DType dtype) {
  switch (dtype) {
    case kFloat64: return {1e-15, 1e-13};
    // gelu's tail, 1 + erf(x) for x near -3.5, cancels to 1e-4 relative error in float32
    // in PyTorch and here alike (by different amounts), hence an absolute term.
    case kFloat32: return {1e-6, 1e-6};
    case kFloat16: return {1e-4, 1e-3};  // one ulp: 2^-10
    default: return {1e-3, 8e-3};        // bfloat16, one ulp: 2^-7
  }
}

class UnaryOpTable : public ::testing::TestWithParam<UnaryRow> {
 protected:
  const UnaryReference& reference() const {
    const UnaryReference* found = testing::unary_reference(GetParam().name);
    EXPECT_NE(found, nullptr) << GetParam().name << " has no reference: add it to "
                              << "tools/reference/make_op_reference.py and rerun the script";
    return found ? *found : testing::kUnaryReferences[0];
  }
};

TEST_P(UnaryOpTable, MatchesPyTorchInEveryDtype) {
  const UnaryReference& r = reference();
  const std::pair<DType, const double(*)[kOpReferenceCount]> cases[] = {{kFloat64, &r.float64},
                                                                        {kFloat32, &r.float32},
                                                                        {kBFloat16, &r.bfloat16},
                                                                        {kFloat16, &r.float16}};
  for (const auto& [dtype, expected] : cases) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    const Tensor out = GetParam().op(reference_tensor(r.input, dtype));
    EXPECT_EQ(out.dtype(), dtype);
    const Tolerance t = tolerance(dtype);
    EXPECT_TRUE(all_close(out, reference_tensor(*expected, kFloat64), t.atol, t.rtol));
  }
}

TEST_P(UnaryOpTable, GradientMatchesPyTorchAndCentralDifferences) {
  const UnaryReference& r = reference();
  const Tensor x = reference_tensor(r.input, kFloat64).requires_grad_();
  std::vector<double> weights;
  for (int k = 0; k < kOpReferenceCount; ++k) weights.push_back(0.5 + k / 24.0);
  const Tensor upstream = from_host(weights.data(), {2, 3, 2, 2}, kFloat64);
  (GetParam().op(x) * upstream).sum().backward();
  EXPECT_TRUE(all_close(x.grad(), reference_tensor(r.grad, kFloat64), 1e-14, 1e-12));
  if (GetParam().smooth) {
    const auto result =
        gradcheck([&](const std::vector<Tensor>& in) { return GetParam().op(in[0]); },
                  {reference_tensor(r.input, kFloat64).requires_grad_()});
    EXPECT_TRUE(result.ok) << result.message;
  }
}

TEST_P(UnaryOpTable, EveryLayoutGivesTheSameBits) {
  const UnaryReference& r = reference();
  for (DType dtype : {kFloat32, kBFloat16}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    const Tensor x = reference_tensor(r.input, dtype);
    const Tensor out = GetParam().op(x);
    const Tensor last = GetParam().op(x.contiguous(MemoryFormat::ChannelsLast));
    EXPECT_TRUE(last.is_contiguous(MemoryFormat::ChannelsLast));
    EXPECT_TRUE(testing::bitwise_equal(last, out));
    // A transposed view: the strided loop.
    const Tensor strided = x.transpose(1, 3).contiguous().transpose(1, 3);
    ASSERT_FALSE(strided.is_contiguous());
    EXPECT_TRUE(testing::bitwise_equal(GetParam().op(strided), out));
    EXPECT_EQ(GetParam().op(x.narrow(0, 0, 0)).sizes(), (Shape{0, 3, 2, 2}));
  }
}

TEST_P(UnaryOpTable, AnIntegerInputIsAnErrorNamingTheOpOrKeepsItsDtype) {
  if (!GetParam().floating_only) {
    const Tensor out = GetParam().op(tensor(std::vector<int64_t>{-3, 0, 7}));
    const Tensor expected = GetParam().op(tensor({-3.0, 0.0, 7.0}, kFloat64));
    if (GetParam().op_name.starts_with("clamp")) {
      // Floating bounds make an integer tensor float32 (tests/ops/promotion_ops_test.cpp).
      EXPECT_EQ(out.dtype(), kFloat32);
      EXPECT_EQ(to_vector<float>(out), to_vector<float>(expected.to(kFloat32)));
      return;
    }
    EXPECT_EQ(out.dtype(), kInt64);  // integers in, integers out: float64's values, truncated
    EXPECT_EQ(to_vector<int64_t>(out), to_vector<int64_t>(expected.to(kInt64)));
    return;
  }
  for (DType dtype : {kInt64, kBool}) {
    try {
      GetParam().op(zeros({3}, dtype));
      ADD_FAILURE() << GetParam().name << " accepted " << dtype_name(dtype);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(GetParam().op_name + ": expected a floating-point"),
                std::string::npos)
          << e.what();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, UnaryOpTable, ::testing::ValuesIn(testing::unary_rows()),
                         [](const auto& info) { return info.param.name; });

class BinaryOpTable : public ::testing::TestWithParam<BinaryRow> {
 protected:
  const BinaryReference& reference() const {
    const BinaryReference* found = testing::binary_reference(GetParam().name);
    EXPECT_NE(found, nullptr) << GetParam().name << " has no reference: add it to "
                              << "tools/reference/make_op_reference.py and rerun the script";
    return found ? *found : testing::kBinaryReferences[0];
  }
  Tensor op(const Tensor& a, const Tensor& b) const { return GetParam().op(a, b); }
};

TEST_P(BinaryOpTable, MatchesPyTorchInEveryDtype) {
  const BinaryReference& r = reference();
  const std::pair<DType, const double(*)[kOpReferenceCount]> cases[] = {{kFloat64, &r.float64},
                                                                        {kFloat32, &r.float32},
                                                                        {kBFloat16, &r.bfloat16},
                                                                        {kFloat16, &r.float16}};
  for (const auto& [dtype, expected] : cases) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    const Tensor out = op(reference_tensor(r.input, dtype), reference_tensor(r.other, dtype));
    EXPECT_EQ(out.dtype(), dtype);
    const Tolerance t = tolerance(dtype);
    EXPECT_TRUE(all_close(out, reference_tensor(*expected, kFloat64), t.atol, t.rtol));
  }
}

TEST_P(BinaryOpTable, GradientsMatchPyTorchAndCentralDifferencesWhenBroadcasting) {
  const BinaryReference& r = reference();
  const Tensor a = reference_tensor(r.input, kFloat64).requires_grad_();
  const Tensor b = reference_tensor(r.other, kFloat64).requires_grad_();
  std::vector<double> weights;
  for (int k = 0; k < kOpReferenceCount; ++k) weights.push_back(0.5 + k / 24.0);
  const Tensor upstream = from_host(weights.data(), {2, 3, 2, 2}, kFloat64);
  (op(a, b) * upstream).sum().backward();
  EXPECT_TRUE(all_close(a.grad(), reference_tensor(r.grad_input, kFloat64), 1e-14, 1e-12));
  EXPECT_TRUE(all_close(b.grad(), reference_tensor(r.grad_other, kFloat64), 1e-14, 1e-12));
  // Each operand broadcast in turn: [2, 3, 2, 2] with [1, 3, 2, 2], and [2, 1, 2, 2] with
  // [2, 3, 2, 2]; the broadcast operand's gradient is summed back to its shape.
  const auto call = [&](const std::vector<Tensor>& in) { return op(in[0], in[1]); };
  const Tensor full_a = reference_tensor(r.input, kFloat64);
  const Tensor full_b = reference_tensor(r.other, kFloat64);
  for (const auto& [input, other] :
       {std::pair{full_a, full_b.narrow(0, 1, 1)}, std::pair{full_a.narrow(1, 2, 1), full_b}}) {
    const auto result =
        gradcheck(call, {input.contiguous().requires_grad_(), other.contiguous().requires_grad_()});
    EXPECT_TRUE(result.ok) << result.message;
  }
}

TEST_P(BinaryOpTable, EveryLayoutGivesTheSameBits) {
  const BinaryReference& r = reference();
  for (DType dtype : {kFloat32, kBFloat16}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    const Tensor a = reference_tensor(r.input, dtype), b = reference_tensor(r.other, dtype);
    const Tensor out = op(a, b);
    const Tensor last =
        op(a.contiguous(MemoryFormat::ChannelsLast), b.contiguous(MemoryFormat::ChannelsLast));
    EXPECT_TRUE(last.is_contiguous(MemoryFormat::ChannelsLast));
    EXPECT_TRUE(testing::bitwise_equal(last, out));
    const Tensor strided = a.transpose(1, 3).contiguous().transpose(1, 3);
    EXPECT_TRUE(testing::bitwise_equal(op(strided, b), out));
    EXPECT_EQ(op(a.narrow(0, 0, 0), b.narrow(0, 0, 0)).sizes(), (Shape{0, 3, 2, 2}));
  }
}

TEST_P(BinaryOpTable, MixedDtypesPromoteAndWrongShapesAreErrorsNamingTheOp) {
  const std::string name = GetParam().op_name;
  // float32 with float64 computes in float64 (tests/ops/promotion_ops_test.cpp has PyTorch's
  // dtypes and values for more pairs).
  EXPECT_EQ(op(full({3}, 0.5), full({3}, 2.0, kFloat64)).dtype(), kFloat64);
  EXPECT_ERROR_CONTAINS(op(zeros({2, 3}), zeros({4})), name + ": shapes [2, 3] and [4]");
  EXPECT_ERROR_CONTAINS(op(Tensor(), zeros({3})), name + ": argument 'input' is an undefined");
  const Tensor a = tensor(std::vector<int64_t>{-3, 0, 7}), b = tensor(std::vector<int64_t>{1});
  const Tensor out = op(a, b);
  const Tensor expected = op(a.to(kFloat64), b.to(kFloat64));
  if (GetParam().integers_to_float) {  // as PyTorch's: integers compute in float32
    EXPECT_EQ(out.dtype(), kFloat32);
    EXPECT_TRUE(testing::all_close(out, expected.to(kFloat32), 1e-6, 1e-6));
  } else {  // integers in, integers out: float64's values, truncated
    EXPECT_EQ(out.dtype(), kInt64);
    EXPECT_EQ(to_vector<int64_t>(out), to_vector<int64_t>(expected.to(kInt64)));
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, BinaryOpTable, ::testing::ValuesIn(testing::binary_rows()),
                         [](const auto& info) { return info.param.name; });

TEST(OpTable, EveryBinaryReferenceHasARowAndEveryRowAReference) {
  for (const BinaryRow& row : testing::binary_rows())
    EXPECT_NE(testing::binary_reference(row.name), nullptr) << row.name;
  for (const BinaryReference& reference : testing::kBinaryReferences) {
    bool found = false;
    for (const BinaryRow& row : testing::binary_rows()) found = found || row.name == reference.name;
    EXPECT_TRUE(found) << reference.name << " has a reference but no row";
  }
}

// The signs of fmod and remainder, with a scalar divisor too, and a zero divisor's NaN, as
// PyTorch (torch.fmod(torch.tensor([5., -5., 5., -5.]), ...) etc.).
TEST(OpTable, FmodTakesTheSignOfTheInputAndRemainderThatOfTheDivisor) {
  const Tensor a = tensor({5.0, -5.0, 5.0, -5.0}, kFloat64);
  const Tensor b = tensor({3.0, 3.0, -3.0, -3.0}, kFloat64);
  EXPECT_EQ(to_vector<double>(fmod(a, b)), (std::vector<double>{2, -2, 2, -2}));
  EXPECT_EQ(to_vector<double>(remainder(a, b)), (std::vector<double>{2, 1, -1, -2}));
  EXPECT_EQ(to_vector<double>(fmod(a, 3.0)), (std::vector<double>{2, -2, 2, -2}));
  EXPECT_EQ(to_vector<double>(remainder(a, -3.0)), (std::vector<double>{-1, -2, -1, -2}));
  EXPECT_TRUE(std::isnan(to_vector<double>(fmod(a, 0.0))[0]));
  EXPECT_TRUE(std::isnan(to_vector<double>(remainder(a, 0.0))[0]));
  EXPECT_EQ(to_vector<float>(atan2(tensor({1.0, 1.0, -1.0}), tensor({1.0, -1.0, 0.0}))),
            (std::vector<float>{std::atan2(1.0f, 1.0f), std::atan2(1.0f, -1.0f),
                                std::atan2(-1.0f, 0.0f)}));
  // PyTorch's gradients: 1 for the input; -trunc(a / b) (fmod), -floor(a / b) (remainder).
  const Tensor leaf_a = a.detach().requires_grad_(), leaf_b = b.detach().requires_grad_();
  remainder(leaf_a, leaf_b).sum().backward();
  EXPECT_EQ(to_vector<double>(leaf_a.grad()), (std::vector<double>{1, 1, 1, 1}));
  EXPECT_EQ(to_vector<double>(leaf_b.grad()), (std::vector<double>{-1, 2, 2, -1}));
  const Tensor scalar_leaf = a.detach().requires_grad_();
  fmod(scalar_leaf, 3.0).sum().backward();
  EXPECT_EQ(to_vector<double>(scalar_leaf.grad()), (std::vector<double>{1, 1, 1, 1}));
  // An integer tensor with a floating divisor computes in float32, as PyTorch's
  // (tests/ops/promotion_ops_test.cpp has the integer cases).
  EXPECT_EQ(fmod(zeros({3}, kInt64), 2.0).dtype(), kFloat32);
  EXPECT_ERROR_CONTAINS(fmod(zeros({3}, kBool), true), "fmod: expected a numeric tensor");
  EXPECT_ERROR_CONTAINS(remainder(Tensor(), 2.0), "remainder: argument 'input' is an undefined");
}

// PyTorch 2.15's values and gradients for torch.clamp(x, lo, hi) with x = [1, 2, 3, 4],
// lo = [2, 2, 5, 1], hi = [3, 3, 3, 4]: a bound taken, a tie with each bound (the gradient split
// evenly), and crossed bounds (the result is max, its gradient all max's).
TEST(OpTable, ClampWithTensorBoundsSplitsTiesAndPrefersMaxWhenTheBoundsCrossAsPyTorch) {
  const Tensor x = tensor({1.0, 2.0, 3.0, 4.0}, kFloat64).requires_grad_();
  const Tensor lo = tensor({2.0, 2.0, 5.0, 1.0}, kFloat64).requires_grad_();
  const Tensor hi = tensor({3.0, 3.0, 3.0, 4.0}, kFloat64).requires_grad_();
  const Tensor out = clamp(x, lo, hi);
  EXPECT_EQ(to_vector<double>(out), (std::vector<double>{2, 2, 3, 4}));
  out.sum().backward();
  EXPECT_EQ(to_vector<double>(x.grad()), (std::vector<double>{0, 0.5, 0, 0.5}));
  EXPECT_EQ(to_vector<double>(lo.grad()), (std::vector<double>{1, 0.5, 0, 0}));
  EXPECT_EQ(to_vector<double>(hi.grad()), (std::vector<double>{0, 0, 1, 0.5}));
  // Bounds broadcast with x, both ways; a NaN bound gives NaN.
  const Tensor row = tensor({-1.0, 0.0, 1.0});
  EXPECT_EQ(clamp(row.reshape({3, 1}), tensor({0.0, 0.5}), std::nullopt).sizes(), (Shape{3, 2}));
  EXPECT_TRUE(std::isnan(to_vector<float>(clamp(row, tensor({std::nan("")}), std::nullopt))[1]));
  EXPECT_ERROR_CONTAINS(clamp(row, std::optional<Tensor>(), std::nullopt),
                        "clamp: expected at least one of min and max");
  EXPECT_EQ(clamp(row, zeros({3}, kFloat64), std::nullopt).dtype(), kFloat64);  // promoted
  EXPECT_ERROR_CONTAINS(clamp(row, std::nullopt, zeros({2})), "clamp: shapes [3] and [2]");
  EXPECT_ERROR_CONTAINS(clamp(zeros({3}, kBool), zeros({3}, kBool), std::nullopt),
                        "clamp: expected a numeric tensor");
}

TEST(OpTable, SoftplusAndHardtanhAtTheirThresholdsAndBoundsAsPyTorch) {
  // softplus is x itself strictly above the threshold, the log formula at it; its gradient
  // there is 1 resp. sigmoid(beta x).
  const Tensor x = tensor({10.0, 10.5, -1.0}, kFloat64).requires_grad_();
  const Tensor out = softplus(x, 2.0, 20.0);
  EXPECT_DOUBLE_EQ(to_vector<double>(out)[0], std::log1p(std::exp(20.0)) / 2.0);
  EXPECT_EQ(to_vector<double>(out)[1], 10.5);
  out.sum().backward();
  EXPECT_DOUBLE_EQ(to_vector<double>(x.grad())[0], 1.0 / (1.0 + std::exp(-20.0)));
  EXPECT_EQ(to_vector<double>(x.grad())[1], 1.0);
  // hardtanh's gradient is zero at the bounds (torch: tensor([0., 0., 1.]) for [-1, 1, 0]),
  // unlike clamp's; NaN stays NaN.
  const Tensor h = tensor({-1.0, 1.0, 0.0, std::nan("")}, kFloat64).requires_grad_();
  const Tensor clamped = hardtanh(h);
  EXPECT_TRUE(std::isnan(to_vector<double>(clamped)[3]));
  clamped.backward(ones({4}, kFloat64));
  EXPECT_EQ(to_vector<double>(h.grad())[0], 0.0);
  EXPECT_EQ(to_vector<double>(h.grad())[1], 0.0);
  EXPECT_EQ(to_vector<double>(h.grad())[2], 1.0);
  EXPECT_ERROR_CONTAINS(hardtanh(h, 2.0, 1.0), "hardtanh: expected min_val <= max_val");
  EXPECT_ERROR_CONTAINS(softplus(zeros({2}, kInt32)), "softplus: expected a floating-point");
}

TEST(OpTable, EveryReferenceHasARowAndEveryRowAReference) {
  for (const UnaryRow& row : testing::unary_rows())
    EXPECT_NE(testing::unary_reference(row.name), nullptr) << row.name;
  for (const UnaryReference& reference : testing::kUnaryReferences) {
    bool found = false;
    for (const UnaryRow& row : testing::unary_rows()) found = found || row.name == reference.name;
    EXPECT_TRUE(found) << reference.name << " has a reference but no row";
  }
}

TEST(OpTable, RoundGoesHalfToEvenAndSignOfNaNIsZeroAsPyTorch) {
  const Tensor ties = tensor({0.5, 1.5, 2.5, -0.5, -2.5});
  EXPECT_EQ(to_vector<float>(round(ties)), (std::vector<float>{0, 2, 2, -0.0f, -2}));
  const Tensor specials = tensor({std::nan(""), -0.0, 0.0, -3.0});
  EXPECT_EQ(to_vector<float>(sign(specials)), (std::vector<float>{0, 0, 0, -1}));
  EXPECT_EQ(to_vector<float>(frac(tensor({-1.5, 2.25}))), (std::vector<float>{-0.5f, 0.25f}));
}

TEST(OpTable, ClampNeedsABoundKeepsNaNAndGivesMaxWhenTheBoundsCross) {
  const Tensor x = tensor({-2.0, std::nan(""), 0.5, 3.0});
  EXPECT_ERROR_CONTAINS(clamp(x, std::optional<double>(), std::nullopt),
                        "clamp: expected at least one of min and max");
  const auto clamped = to_vector<float>(clamp(x, -1.0, 1.0));
  EXPECT_EQ(clamped[0], -1.0f);
  EXPECT_TRUE(std::isnan(clamped[1]));
  EXPECT_EQ(clamped[3], 1.0f);
  EXPECT_EQ(to_vector<float>(clamp(x, 2.0, 1.0))[2], 1.0f);  // min > max: max, as PyTorch
  EXPECT_EQ(to_vector<float>(clamp(x, std::nullopt, 0.0))[0], -2.0f);
  // The gradient passes where min <= x <= max, the bounds included.
  const Tensor leaf = tensor({-1.0, -0.5, 1.0, 2.0}, kFloat64).requires_grad_();
  clamp(leaf, -1.0, 1.0).sum().backward();
  EXPECT_EQ(to_vector<double>(leaf.grad()), (std::vector<double>{1, 1, 1, 0}));
}

TEST(OpTable, ComparisonsAndWhereTakeAScalarOnEitherSide) {
  const Tensor x = tensor({0.2, 0.5, 0.9});
  EXPECT_EQ(to_vector<bool>(x < 0.5), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(to_vector<bool>(0.5 < x), (std::vector<bool>{false, false, true}));
  EXPECT_EQ(to_vector<bool>(0.5 <= x), to_vector<bool>(x >= 0.5));
  EXPECT_EQ(to_vector<bool>(0.5 > x), to_vector<bool>(x < 0.5));
  EXPECT_EQ(to_vector<bool>(0.5 >= x), to_vector<bool>(x <= 0.5));
  EXPECT_EQ(to_vector<bool>(0.5 == x), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(to_vector<bool>(x != 0.5), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(to_vector<float>(where(x > 0.4, x, 0.0)), (std::vector<float>{0.0f, 0.5f, 0.9f}));
  EXPECT_EQ(to_vector<float>(where(x > 0.4, -1.0, x)), (std::vector<float>{0.2f, -1.0f, -1.0f}));
  EXPECT_EQ(where(x > 0.4, x, 0.0).dtype(), kFloat32);
  const Tensor leaf = tensor({0.2, 0.5, 0.9}, kFloat64).requires_grad_();
  where(leaf > 0.4, leaf, 0.0).sum().backward();
  EXPECT_EQ(to_vector<double>(leaf.grad()), (std::vector<double>{0, 1, 1}));
}

TEST(OpTable, TensorMethodsForwardToTheFunctions) {
  const Tensor x = tensor({0.3, -1.2, 2.0});
  EXPECT_TRUE(testing::bitwise_equal(x.sin(), sin(x)));
  EXPECT_TRUE(testing::bitwise_equal(x.erfc(), erfc(x)));
  EXPECT_TRUE(testing::bitwise_equal(x.square(), square(x)));
  EXPECT_TRUE(testing::bitwise_equal(x.abs().rsqrt(), rsqrt(abs(x))));
  const Tensor y = tensor({1.5, 0.7, -0.4});
  EXPECT_TRUE(testing::bitwise_equal(x.atan2(y), atan2(x, y)));
  EXPECT_TRUE(testing::bitwise_equal(x.fmod(y), fmod(x, y)));
  EXPECT_TRUE(testing::bitwise_equal(x.fmod(0.5), fmod(x, 0.5)));
  EXPECT_TRUE(testing::bitwise_equal(x.remainder(y), remainder(x, y)));
  EXPECT_TRUE(testing::bitwise_equal(x.remainder(0.5), remainder(x, 0.5)));
}

}  // namespace
}  // namespace minidl
