// Tensor::clamp, clamp_min and clamp_max as methods, and their in-place forms (clamp_,
// clamp_min_, clamp_max_), as LibTorch's: the methods are the free functions of
// ops/elementwise.h (checked in the operator table, tests/ops/op_table.h, and for promotion in
// tests/ops/promotion_ops_test.cpp against PyTorch), so this checks the forwarding and what
// in-place adds: the same storage, the version counter, views written through, and the errors
// of the other in-place ops. Expected values are PyTorch 2.15's, from the call beside them.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <vector>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/autograd/gradcheck.h"
#include "minidl/ops/elementwise.h"
#include "test_util.h"

namespace minidl {
namespace {

// Made in each test: a namespace-scope tensor would be built before minidl's own statics.
Tensor values_with_nan() { return tensor({-2.0, -0.5, 0.25, 0.5, 2.0, NAN}); }

// Equal shapes and values, NaN equal to NaN.
::testing::AssertionResult same_values(const Tensor& actual, const Tensor& expected) {
  if (actual.sizes() != expected.sizes() || actual.dtype() != expected.dtype())
    return ::testing::AssertionFailure() << "shapes or dtypes differ";
  const std::vector<double> a = to_vector<double>(actual), e = to_vector<double>(expected);
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == e[i] || (std::isnan(a[i]) && std::isnan(e[i]))))
      return ::testing::AssertionFailure() << "element " << i << ": " << a[i] << " vs " << e[i];
  return ::testing::AssertionSuccess();
}

TEST(ClampMethod, IsTheFreeFunctionForEveryKindOfBound) {
  const Tensor x = values_with_nan();
  const Tensor low = tensor({-1.0, 0.0, 0.0, 1.0, 1.0, 0.0});
  const Tensor high = tensor(0.3);  // 0-dimensional, broadcast
  EXPECT_TRUE(same_values(x.clamp(-1, 1), clamp(x, -1, 1)));
  EXPECT_TRUE(same_values(x.clamp(0.25), clamp(x, 0.25, std::nullopt)));
  EXPECT_TRUE(same_values(x.clamp(std::nullopt, 0.5), clamp(x, std::nullopt, 0.5)));
  EXPECT_TRUE(same_values(x.clamp(low, high), clamp(x, low, high)));
  EXPECT_TRUE(same_values(x.clamp(low), clamp(x, low, std::nullopt)));
  EXPECT_TRUE(same_values(x.clamp(std::nullopt, high), clamp(x, std::nullopt, high)));
  EXPECT_TRUE(same_values(x.clamp_min(0.25), clamp_min(x, 0.25)));
  EXPECT_TRUE(same_values(x.clamp_max(0.25), clamp_max(x, 0.25)));
  // x.clamp_min(low), x.clamp_max(high): torch.clamp_min / clamp_max with tensor bounds,
  // NaN kept.
  EXPECT_TRUE(same_values(x.clamp_min(low), tensor({-1.0, 0.0, 0.25, 1.0, 2.0, NAN})));
  EXPECT_TRUE(same_values(x.clamp_max(high), tensor({-2.0, -0.5, 0.25, 0.3, 0.3, NAN})));
  EXPECT_TRUE(same_values(clamp_min(x, low), x.clamp_min(low)));
  EXPECT_TRUE(same_values(clamp_max(x, high), x.clamp_max(high)));
}

TEST(ClampMethod, GradientsFlowThroughTheMethods) {
  const Tensor x = testing::wiggly({3, 4}, kFloat64, testing::Wiggle{.amplitude = 2});
  const Tensor low = testing::wiggly({4}, 0.7, kFloat64).sub(0.5);
  const GradcheckResult result = gradcheck(
      [](const std::vector<Tensor>& in) {
        return in[0].clamp(in[1], std::nullopt) + in[0].clamp(-0.9, 1.3) +
               in[0].clamp_max(in[1] + 1.0) + in[0].clamp_min(0.1);
      },
      {x.detach().requires_grad_(), low.detach().requires_grad_()});
  EXPECT_TRUE(result.ok) << result.message;
}

TEST(ClampInPlace, WritesIntoTheSameStorageAndBumpsTheVersion) {
  Tensor x = values_with_nan().clone();
  const void* data = x.data_ptr();
  const uint64_t version = x.version();
  // torch.tensor([-2., -0.5, 0.25, 0.5, 2., nan]).clamp_(-1, 0.3)
  Tensor& same = x.clamp_(-1, 0.3);
  EXPECT_TRUE(same.is_same(x));
  EXPECT_EQ(x.data_ptr(), data);
  EXPECT_GT(x.version(), version);
  EXPECT_TRUE(same_values(x, tensor({-1.0, -0.5, 0.25, 0.3, 0.3, NAN})));

  // Tensor bounds broadcast to the target: .clamp_(tensor([0., 0.4, 0., 0.4, 0., 0.4]), 0-d 0.35)
  Tensor y = values_with_nan().clone();
  const uint64_t y_version = y.version();
  y.clamp_(tensor({0.0, 0.4, 0.0, 0.4, 0.0, 0.4}), tensor(0.35));
  EXPECT_GT(y.version(), y_version);
  EXPECT_TRUE(same_values(y, tensor({0.0, 0.35, 0.25, 0.35, 0.35, NAN})));

  Tensor ints = tensor({-5, 0, 5});
  ints.clamp_min_(-1).clamp_max_(tensor({3, 3, 3}));
  EXPECT_EQ(ints.dtype(), kInt64);
  EXPECT_EQ(to_vector<int64_t>(ints), (std::vector<int64_t>{-1, 0, 3}));
  Tensor halves = tensor({-3.0, 3.0}, kFloat16);
  halves.clamp_max_(2.5).clamp_min_(tensor(-1.5, kFloat16));
  EXPECT_EQ(to_vector<float>(halves), (std::vector<float>{-1.5f, 2.5f}));
}

TEST(ClampInPlace, WritesThroughAView) {
  Tensor base = arange(12, kFloat32).reshape({3, 4});
  base.t().narrow(0, 1, 2).clamp_(std::nullopt, 5.0);  // columns 1 and 2
  // base = torch.arange(12.).reshape(3, 4); base.t()[1:3].clamp_(max=5)
  EXPECT_EQ(to_vector<float>(base), (std::vector<float>{0, 1, 2, 3, 4, 5, 5, 7, 8, 5, 5, 11}));
}

TEST(ClampInPlace, RefusesWhatTheOtherInPlaceOpsRefuse) {
  // A leaf that requires grad, in grad mode (PyTorch: "a leaf Variable that requires grad is
  // being used in an in-place operation"); allowed under NoGradGuard, as an optimizer's update.
  Tensor leaf = tensor({1.0, 3.0}).requires_grad_();
  EXPECT_ERROR_CONTAINS(leaf.clamp_(0, 2),
                        "clamp_: in-place operation on a tensor of shape [2] "
                        "that requires grad");
  EXPECT_ERROR_CONTAINS(leaf.clamp_(tensor({0.0, 0.0})), "clamp_: in-place operation");
  EXPECT_ERROR_CONTAINS(leaf.clamp_max_(2.0), "clamp_: in-place operation");
  {
    NoGradGuard no_grad;
    leaf.clamp_(0, 2);
  }
  EXPECT_EQ(to_vector<float>(leaf), (std::vector<float>{1, 2}));

  // A broadcast view shares memory between elements.
  Tensor broadcast = zeros({1, 3}).expand({2, 3});
  EXPECT_ERROR_CONTAINS(broadcast.clamp_(0, 1), "clamp_: cannot write in place into a broadcast");

  // A bound the target's dtype cannot hold leaves the tensor as it was, even when the other
  // bound could be applied: int64 .clamp_(0, 2.5) raises in PyTorch.
  Tensor ints = tensor({-5, 5});
  EXPECT_ERROR_CONTAINS(ints.clamp_(0, 2.5), "clamp_: the result type float32");
  EXPECT_EQ(to_vector<int64_t>(ints), (std::vector<int64_t>{-5, 5}));
  EXPECT_ERROR_CONTAINS(ints.clamp_(std::optional<Scalar>(), std::nullopt),
                        "clamp_: expected at least one of min and max, got neither");
  EXPECT_ERROR_CONTAINS(tensor({true}).clamp_(0, 1), "clamp_: expected a numeric tensor");
  EXPECT_ERROR_CONTAINS(Tensor().clamp_(0, 1), "clamp_: argument 'self' is an undefined tensor");
  EXPECT_ERROR_CONTAINS(zeros({2}).clamp_min_(Tensor()), "clamp");
}

}  // namespace
}  // namespace minidl
