// Type promotion (core/type_promotion.h) against PyTorch's torch.promote_types and
// torch.result_type (tests/ops/promotion_reference.h, from
// tools/reference/make_promotion_reference.py), and the binary ops computing in the promoted dtype:
// values checked against PyTorch 2.15, gradients back in each input's own dtype, and a gradient
// check.
#include "minidl/core/type_promotion.h"

#include <gtest/gtest.h>

#include <vector>

#include "minidl/core/autograd/gradcheck.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/reduce.h"
#include "promotion_reference.h"
#include "test_util.h"

namespace minidl {
namespace {

Tensor filled(const Shape& sizes, double value, DType dtype) { return full(sizes, value, dtype); }

TEST(TypePromotion, PromoteTypesMatchesPyTorch) {
  ASSERT_EQ(testing::kPromoteTypesReferences.size(), 64u);
  for (const testing::PromoteTypesReference& reference : testing::kPromoteTypesReferences)
    EXPECT_EQ(promote_types(reference.a, reference.b), reference.promoted)
        << reference.a << " with " << reference.b;
}

TEST(TypePromotion, ResultTypeOfTensorsMatchesPyTorch) {
  for (const testing::ResultTypeReference& reference : testing::kResultTypeReferences) {
    const Shape a_sizes = reference.a_dim ? Shape{2} : Shape{};
    const Shape b_sizes = reference.b_dim ? Shape{2} : Shape{};
    EXPECT_EQ(result_type(filled(a_sizes, 1, reference.a), filled(b_sizes, 1, reference.b)),
              reference.result)
        << reference.a << " (" << reference.a_dim << "-D) with " << reference.b << " ("
        << reference.b_dim << "-D)";
  }
}

TEST(TypePromotion, ResultTypeWithAScalarMatchesPyTorch) {
  for (const testing::ScalarResultTypeReference& reference : testing::kScalarResultTypeReferences) {
    const Tensor t = filled(reference.dim ? Shape{2} : Shape{}, 1, reference.tensor);
    EXPECT_EQ(result_type(t, reference.scalar), reference.result)
        << reference.tensor << " (" << reference.dim << "-D) with " << reference.scalar.to_double()
        << " of type " << reference.scalar.type();
  }
}

TEST(TypePromotion, CanCastRefusesALowerCategory) {
  EXPECT_TRUE(can_cast(kInt64, kFloat16));
  EXPECT_TRUE(can_cast(kFloat64, kFloat32));
  EXPECT_TRUE(can_cast(kBool, kUInt8));
  EXPECT_FALSE(can_cast(kFloat32, kInt64));
  EXPECT_FALSE(can_cast(kInt32, kBool));
}

// Values below are PyTorch 2.15's for the same expressions.
TEST(TypePromotion, ArithmeticComputesInTheResultType) {
  const Tensor ints = arange(5);  // int64
  const Tensor halves = div(ints, 2.0);
  EXPECT_EQ(halves.dtype(), kFloat32);
  EXPECT_EQ(to_vector<float>(halves), (std::vector<float>{0, 0.5, 1, 1.5, 2}));
  EXPECT_EQ((ints / 2.0).dtype(), kFloat32);
  EXPECT_EQ(to_vector<float>(2.0 / arange(1, 3)), (std::vector<float>{2, 1}));

  // True division of integers gives float32.
  const Tensor quotient = div(tensor({7.0, -7.0}).to(kInt32), tensor({2.0, 2.0}).to(kInt64));
  EXPECT_EQ(quotient.dtype(), kFloat32);
  EXPECT_EQ(to_vector<float>(quotient), (std::vector<float>{3.5, -3.5}));

  // A scalar does not widen a floating tensor; a floating one (2.0 as well as 2.5) makes an
  // integer one float32, an integer one keeps it.
  EXPECT_EQ((ones({2}, kFloat16) + 2.5).dtype(), kFloat16);
  EXPECT_EQ(to_vector<float>(ones({2}, kFloat16) + 2.5), (std::vector<float>{3.5, 3.5}));
  EXPECT_EQ((ints + 0.5).dtype(), kFloat32);
  EXPECT_EQ(to_vector<float>(ints * 0.5), (std::vector<float>{0, 0.5, 1, 1.5, 2}));
  EXPECT_EQ((ints - 0.25).dtype(), kFloat32);
  EXPECT_EQ((ints + 2.0).dtype(), kFloat32);
  EXPECT_EQ((ints + 2).dtype(), kInt64);

  // int32 with float16 gives float16; int32 with int64 gives int64; uint8 with int32, int32.
  const Tensor i32 = tensor({1.0, 2.0}).to(kInt32);
  EXPECT_EQ((i32 + tensor({0.5, 0.25}).to(kFloat16)).dtype(), kFloat16);
  EXPECT_EQ(to_vector<int64_t>(i32 * tensor({3.0, 4.0}).to(kInt64)), (std::vector<int64_t>{3, 8}));
  EXPECT_EQ((tensor({1.0, 2.0}).to(kUInt8) - i32).dtype(), kInt32);
  // float16 with bfloat16 gives float32; bool with int64 gives int64.
  EXPECT_EQ((ones({2}, kFloat16) + ones({2}, kBFloat16)).dtype(), kFloat32);
  const Tensor bool_sum = ones({2}, kBool) + arange(2);
  EXPECT_EQ(bool_sum.dtype(), kInt64);
  EXPECT_EQ(to_vector<int64_t>(bool_sum), (std::vector<int64_t>{1, 2}));
  // A 0-dimensional tensor of the same category does not widen a dimensioned one.
  EXPECT_EQ((i32 + full({}, 5, kInt64)).dtype(), kInt32);
  EXPECT_EQ((ones({2}, kFloat16) * full({}, 3, kFloat64)).dtype(), kFloat16);

  // float32 with float64 computes in float64: 0.1f + 0.1 is not rounded to float32 first.
  const Tensor mixed = add(tensor({0.1}), tensor({0.1}, kFloat64));
  EXPECT_EQ(mixed.dtype(), kFloat64);
  EXPECT_EQ(to_vector<double>(mixed)[0], static_cast<double>(0.1f) + 0.1);
}

TEST(TypePromotion, ExtremaComparisonsAndWherePromote) {
  const Tensor ints = tensor({1.0, 5.0, -3.0}).to(kInt32);
  const Tensor floats = tensor({1.5, 4.5, -3.0});
  const Tensor high = maximum(ints, floats);
  EXPECT_EQ(high.dtype(), kFloat32);
  EXPECT_EQ(to_vector<float>(high), (std::vector<float>{1.5, 5, -3}));
  EXPECT_EQ(to_vector<float>(minimum(floats, ints)), (std::vector<float>{1, 4.5, -3}));
  EXPECT_EQ(to_vector<bool>(lt(ints, floats)), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(to_vector<bool>(eq(ints, floats)), (std::vector<bool>{false, false, true}));
  EXPECT_EQ(to_vector<bool>(ints < 1.5), (std::vector<bool>{true, false, true}));

  const Tensor condition = tensor({1.0, 0.0, 1.0}).to(kBool);
  const Tensor chosen = where(condition, ints, floats);
  EXPECT_EQ(chosen.dtype(), kFloat32);
  EXPECT_EQ(to_vector<float>(chosen), (std::vector<float>{1, 4.5, -3}));
  const Tensor with_scalar = where(condition, ints, 0.5);
  EXPECT_EQ(with_scalar.dtype(), kFloat32);
  EXPECT_EQ(to_vector<float>(with_scalar), (std::vector<float>{1, 0.5, -3}));
  EXPECT_EQ(where(condition, 2.0, ints).dtype(), kFloat32);
  EXPECT_EQ(where(condition, 2, ints).dtype(), kInt32);
  // A float64 tensor's scalar is not rounded to float32 on the way.
  EXPECT_EQ(to_vector<double>(where(condition, tensor({1.0}, kFloat64), 0.1))[1], 0.1);
}

TEST(TypePromotion, GradientsComeBackInEachInputsDtype) {
  const Tensor a = tensor({1.5, -2.0}).requires_grad_();            // float32
  const Tensor b = tensor({0.25, 3.0}, kFloat64).requires_grad_();  // float64
  const Tensor h = tensor({2.0, 4.0}, kFloat16).requires_grad_();
  const Tensor y = mul(a, b) + div(h, a) - maximum(h, b);
  EXPECT_EQ(y.dtype(), kFloat64);
  y.sum().backward();
  ASSERT_EQ(a.grad().dtype(), kFloat32);
  ASSERT_EQ(b.grad().dtype(), kFloat64);
  ASSERT_EQ(h.grad().dtype(), kFloat16);
  // d/da = b - h / a^2; d/db = a - [b > h]; d/dh = 1 / a - [h > b] (PyTorch gives the same).
  // Each term is rounded to the input's dtype before the terms are summed, as in PyTorch.
  const std::vector<float> grad_a = to_vector<float>(a.grad());
  EXPECT_NEAR(grad_a[0], 0.25 - 2.0 / 2.25, 1e-6);
  EXPECT_NEAR(grad_a[1], 3.0 - 4.0 / 4.0, 1e-6);
  EXPECT_EQ(to_vector<double>(b.grad()), (std::vector<double>{1.5, -2.0}));
  const std::vector<float> grad_h = to_vector<float>(h.grad());
  EXPECT_NEAR(grad_h[0], 1.0 / 1.5 - 1.0, 1e-3);  // float16's precision
  EXPECT_NEAR(grad_h[1], -1.5, 1e-3);
}

TEST(TypePromotion, GradcheckThroughPromotedOperands) {
  const Tensor ints = tensor({1.0, -2.0, 3.0}).to(kInt32);
  const Tensor x = testing::wiggly({3}, 0.3, kFloat64).requires_grad_();
  const Tensor y = testing::wiggly({3}, 1.1, kFloat64).add(2.5).requires_grad_();
  const GradcheckResult result = gradcheck(
      [&](const std::vector<Tensor>& in) {
        return mul(in[0], ints) + div(ints, in[1]) + where(ints > 0, in[0], 0.5) +
               maximum(in[1], ints);
      },
      {x, y});
  EXPECT_TRUE(result) << result.message;
}

TEST(TypePromotion, InPlaceOpsComputeInTheResultTypeAndKeepTheirOwn) {
  Tensor target = tensor({0.1, 1.0});
  target.add_(tensor({0.1, 2.0}, kFloat64));
  EXPECT_EQ(target.dtype(), kFloat32);
  EXPECT_EQ(to_vector<float>(target),
            (std::vector<float>{static_cast<float>(static_cast<double>(0.1f) + 0.1), 3.0f}));
  Tensor counts = arange(3, kFloat32);
  counts.mul_(arange(3));
  EXPECT_EQ(to_vector<float>(counts), (std::vector<float>{0, 1, 4}));
  Tensor ints = arange(3);
  ints.sub_(tensor({1.0, 1.0, 1.0}).to(kInt32));
  EXPECT_EQ(to_vector<int64_t>(ints), (std::vector<int64_t>{-1, 0, 1}));
}

}  // namespace
}  // namespace minidl
