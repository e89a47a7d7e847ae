// isclose, allclose and equal (ops/closeness.h) at the values the operator table's samples do
// not reach: infinities, NaN, exact float32 rounding at the tolerance's edge, integers,
// empty tensors and inputs that require grad. Every expected value is PyTorch 2.15's, from the
// call named beside it. The table rows "isclose" and "isclose_tolerances"
// (tests/ops/op_table_samples.h) check broadcasting, dtypes, errors and CPU/CUDA parity.
#include "minidl/ops/closeness.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "minidl/ops/elementwise.h"
#include "test_util.h"

namespace minidl {
namespace {

constexpr double kInf = INFINITY;

std::vector<bool> values(const Tensor& t) {
  EXPECT_EQ(t.dtype(), kBool);
  return to_vector<bool>(t);
}

TEST(Closeness, InfinitiesNanAndTheEdgeOfTheTolerance) {
  // a = torch.tensor([inf, inf, -inf, 1e30, nan, nan, 1.0, 0.0])
  // b = torch.tensor([inf, -inf, -inf, inf, nan, 1.0, 1.0 + 1e-5, 1e-8])
  const Tensor a = tensor({kInf, kInf, -kInf, 1e30, NAN, NAN, 1.0, 0.0});
  const Tensor b = tensor({kInf, -kInf, -kInf, kInf, NAN, 1.0, 1.0 + 1e-5, 1e-8});
  // torch.isclose(a, b): 1 + 1e-5 rounds to 1.0000100136 in float32, just past the tolerance.
  EXPECT_EQ(values(isclose(a, b)),
            (std::vector<bool>{true, false, true, false, false, false, false, true}));
  // torch.isclose(a, b, equal_nan=True)
  EXPECT_EQ(values(isclose(a, b, 1e-5, 1e-8, true)),
            (std::vector<bool>{true, false, true, false, true, false, false, true}));
  // torch.isclose(a, b, rtol=0, atol=0): equality
  EXPECT_EQ(values(a.isclose(b, 0, 0)),
            (std::vector<bool>{true, false, true, false, false, false, false, false}));
}

TEST(Closeness, IntegersCompareTheirDifferenceWithoutWrappingAround) {
  for (DType dtype : {kInt32, kInt64}) {
    const Tensor a = tensor({100, -100, 100, 5}, dtype);
    const Tensor b = tensor({101, -98, 99, 4}, dtype);
    // torch.isclose(a, b, rtol=0.01, atol=0), (..., atol=0.5), (..., rtol=0, atol=1)
    EXPECT_EQ(values(isclose(a, b, 0.01, 0)), (std::vector<bool>{true, false, false, false}));
    EXPECT_EQ(values(isclose(a, b, 0.01, 0.5)), (std::vector<bool>{true, false, true, false}));
    EXPECT_EQ(values(isclose(a, b, 0, 1)), (std::vector<bool>{true, false, true, true}));
  }
  // uint8 1 - 2 would wrap to 255: torch.isclose(tensor([1, 2], uint8), tensor([2, 1], uint8),
  // rtol=0, atol=1) is [True, True].
  EXPECT_EQ(values(isclose(tensor({1, 2}, kUInt8), tensor({2, 1}, kUInt8), 0, 1)),
            (std::vector<bool>{true, true}));
  // Zero tolerances compare exactly, beyond float32's precision:
  // torch.isclose(tensor([2**62, 2**62 + 1]), tensor([2**62 + 1, 2**62 + 1]), rtol=0, atol=0)
  const int64_t big = int64_t{1} << 62;
  EXPECT_EQ(values(isclose(tensor({big, big + 1}), tensor({big + 1, big + 1}), 0, 0)),
            (std::vector<bool>{false, true}));
}

TEST(Closeness, AllcloseAndEqual) {
  // torch.allclose(tensor([1.0, 2.0]), tensor([1.0, 2.0 + 1e-5])) and with 2.0 + 1e-4
  EXPECT_TRUE(allclose(tensor({1.0, 2.0}), tensor({1.0, 2.0 + 1e-5})));
  EXPECT_FALSE(allclose(tensor({1.0, 2.0}), tensor({1.0, 2.0 + 1e-4})));
  EXPECT_TRUE(tensor({1.0, 2.0}).allclose(tensor({1.0, 2.1}), 0.1));
  // torch.allclose(torch.zeros(0, 3), torch.zeros(3)): an empty broadcast is close
  EXPECT_TRUE(allclose(zeros({0, 3}), zeros({3})));
  EXPECT_FALSE(allclose(tensor({NAN}), tensor({NAN})));
  EXPECT_TRUE(allclose(tensor({NAN}), tensor({NAN}), 1e-5, 1e-8, true));

  // torch.equal(torch.zeros(0), torch.zeros(0, dtype=torch.int64)),
  // torch.equal(tensor([True, False]), tensor([1, 0])), torch.equal of a NaN with itself
  EXPECT_TRUE(equal(zeros({0}), zeros({0}, kInt64)));
  EXPECT_TRUE(equal(tensor({true, false}), tensor({1, 0})));
  const Tensor nan = tensor({NAN});
  EXPECT_FALSE(equal(nan, nan));
  EXPECT_TRUE(tensor({{1, 2}, {3, 4}}).equal(tensor({{1.0, 2.0}, {3.0, 4.0}})));
  EXPECT_FALSE(equal(tensor({{1, 2}, {3, 4}}), tensor({{1, 2}, {3, 5}})));
  // No broadcasting: torch.equal(tensor([1., 2.]), tensor([[1., 2.]])) is False.
  EXPECT_FALSE(equal(tensor({1.0, 2.0}), tensor({{1.0, 2.0}})));
  // A transposed view compares its values, not its memory.
  const Tensor m = arange(6).reshape({2, 3});
  EXPECT_TRUE(equal(m.t(), m.t().contiguous()));
  EXPECT_FALSE(equal(m.t().contiguous().view({2, 3}), m));
}

TEST(Closeness, RecordsNothingForInputsThatRequireGrad) {
  // torch.isclose(x, x).requires_grad is False for a leaf x that requires grad.
  const Tensor x = tensor({1.0, 2.0}).requires_grad_();
  const Tensor close = isclose(x, x * 1.0);
  EXPECT_FALSE(close.requires_grad());
  EXPECT_EQ(values(close), (std::vector<bool>{true, true}));
  EXPECT_TRUE(allclose(x, x));
  EXPECT_TRUE(equal(x, x.detach()));
}

TEST(Closeness, ErrorsNameTheOp) {
  const Tensor x = zeros({2});
  EXPECT_ERROR_CONTAINS(isclose(Tensor(), x),
                        "isclose: argument 'input' is an undefined tensor (default-constructed)");
  EXPECT_ERROR_CONTAINS(allclose(x, Tensor()), "allclose: argument 'other' is an undefined tensor");
  EXPECT_ERROR_CONTAINS(equal(Tensor(), x), "equal: argument 'input' is an undefined tensor");
  EXPECT_ERROR_CONTAINS(allclose(x, x, 1e-5, -1e-8), "allclose: expected atol >= 0, got -1e-08");
  EXPECT_ERROR_CONTAINS(allclose(x, zeros({3})),
                        "allclose: shapes [2] and [3] cannot be broadcast together");
  EXPECT_ERROR_CONTAINS(allclose(x, zeros({2}, kInt64)),
                        "allclose: expected both tensors to have one dtype, got float32 and int64");
}

}  // namespace
}  // namespace minidl
