// The operator table (tests/ops/op_table.h) on the CPU: for every row, PyTorch's values in each
// dtype and its float64 gradient (tests/ops/op_reference.h), a central-difference gradient check,
// the same bits in every layout (contiguous, channels-last, strided, empty), and the error for an
// input of the wrong dtype.
#include "op_table.h"

#include <gtest/gtest.h>

#include <string>

#include "minidl/core/autograd/gradcheck.h"
#include "minidl/minidl.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
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
                              << "tools/make_op_reference.py and rerun the script";
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
  if (!GetParam().floating_only) {  // integers in, integers out: float64's values, truncated
    const Tensor out = GetParam().op(tensor(std::vector<int64_t>{-3, 0, 7}));
    EXPECT_EQ(out.dtype(), kInt64);
    EXPECT_EQ(to_vector<int64_t>(out),
              to_vector<int64_t>(GetParam().op(tensor({-3.0, 0.0, 7.0}, kFloat64)).to(kInt64)));
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
  EXPECT_ERROR_CONTAINS(clamp(x, std::nullopt, std::nullopt),
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
}

}  // namespace
}  // namespace minidl
