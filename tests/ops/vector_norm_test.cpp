// norm (torch.linalg.vector_norm under LibTorch's name) on the CPU: values and gradients
// against PyTorch's (tests/ops/indexing_reference.h) for p = 2, 1, inf, -inf, 0, 3 and 0.5 over
// every dim and over one with keepdim, f64 gradient checks, the zero gradient at x = 0,
// 16-bit inputs, and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "indexing_reference.h"
#include "minidl/core/autograd/gradcheck.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::wiggly;

template <size_t N>
Tensor reference(const double (&values)[N], const Shape& sizes) {
  EXPECT_EQ(static_cast<int64_t>(N), shape_numel(sizes));
  return from_host(values, sizes, kFloat64);
}

struct NormCase {
  const char* name;
  double p;
  const double* all_output;
  const double* all_grad;
  const double* dim1_output;
  const double* dim1_grad;
};

#define NORM_CASE(NAME, P)                                                             \
  NormCase {                                                                           \
#NAME, P, testing::kNorm##NAME##AllOutput, testing::kNorm##NAME##AllGrad,          \
        testing::kNorm##NAME##Dim1KeepdimOutput, testing::kNorm##NAME##Dim1KeepdimGrad \
  }

const std::vector<NormCase>& norm_cases() {
  static const std::vector<NormCase> cases = {
      NORM_CASE(P2, 2.0),        NORM_CASE(P1, 1.0),
      NORM_CASE(PInf, INFINITY), NORM_CASE(PMinusInf, -INFINITY),
      NORM_CASE(P0, 0.0),        NORM_CASE(P3, 3.0),
      NORM_CASE(PHalf, 0.5),
  };
  return cases;
}

Tensor host(const double* values, const Shape& sizes) { return from_host(values, sizes, kFloat64); }

TEST(VectorNorm, MatchesPyTorchForEveryOrder) {
  for (const NormCase& c : norm_cases()) {
    for (DType dtype : {kFloat64, kFloat32}) {
      SCOPED_TRACE(std::string(c.name) + " " + std::string(dtype_name(dtype)));
      const double tolerance = dtype == kFloat64 ? 1e-12 : 1e-5;
      Tensor x = wiggly({3, 4}, 0.0, dtype).requires_grad_();
      Tensor all = norm(x, c.p);
      EXPECT_EQ(all.dim(), 0);
      EXPECT_EQ(all.dtype(), dtype);
      EXPECT_TRUE(all_close(all, host(c.all_output, {}), tolerance, tolerance));
      all.backward(wiggly({}, 1.0, dtype));
      EXPECT_TRUE(all_close(x.grad(), host(c.all_grad, {3, 4}), tolerance, tolerance));
      Tensor y = wiggly({3, 4}, 0.0, dtype).requires_grad_();
      Tensor rows = y.norm(c.p, {1}, /*keepdim=*/true);
      EXPECT_EQ(rows.sizes(), (Shape{3, 1}));
      EXPECT_TRUE(all_close(rows, host(c.dim1_output, {3, 1}), tolerance, tolerance));
      rows.backward(wiggly({3, 1}, 1.0, dtype));
      EXPECT_TRUE(all_close(y.grad(), host(c.dim1_grad, {3, 4}), tolerance, tolerance));
    }
  }
}

TEST(VectorNorm, DefaultIsTheEuclideanNormOverEveryDim) {
  const Tensor x = wiggly({2, 3, 4});
  EXPECT_TRUE(all_close(norm(x), sqrt(sum(x * x)), 1e-6, 1e-6));
  EXPECT_EQ(norm(x, 2, {0, -1}).sizes(), (Shape{3}));
  EXPECT_EQ(x.norm(1, {1}, true).sizes(), (Shape{2, 1, 4}));
}

TEST(VectorNormGradcheck, EveryDifferentiableOrder) {
  Tensor x = wiggly({3, 4}, 0.0, kFloat64).requires_grad_();  // no zeros, no ties
  for (double p : {2.0, 1.0, 3.0, 0.5, 1.5, double(INFINITY), double(-INFINITY)}) {
    for (const Shape& dims : {Shape{}, Shape{1}, Shape{0}}) {
      auto result =
          gradcheck([&](const std::vector<Tensor>& in) { return norm(in[0], p, dims); }, {x});
      EXPECT_TRUE(result) << "p " << p << " dims " << shape_str(dims) << ": " << result.message;
    }
  }
}

TEST(VectorNorm, GradientIsZeroWhereTheNormIsZero) {
  for (double p : {2.0, 3.0, 1.5}) {
    Tensor x = zeros({2, 3}, kFloat64).requires_grad_();
    norm(x, p, {1}).backward(ones({2}, kFloat64));
    EXPECT_EQ(to_vector<double>(x.grad()), std::vector<double>(6, 0.0)) << "p " << p;
  }
  // A row of zeros beside a row without: only the second row's gradient is non-zero.
  Tensor mixed = tensor({0.0, 0.0, 3.0, 4.0}, kFloat64).reshape({2, 2}).requires_grad_();
  norm(mixed, 2, {1}).backward(ones({2}, kFloat64));
  EXPECT_EQ(to_vector<double>(mixed.grad()), (std::vector<double>{0.0, 0.0, 0.6, 0.8}));
}

TEST(VectorNorm, InfinityNormSharesTheGradientAmongTies) {
  Tensor x = tensor({-2.0, 1.0, 2.0}, kFloat64).requires_grad_();
  norm(x, INFINITY).backward();
  EXPECT_EQ(to_vector<double>(x.grad()), (std::vector<double>{-0.5, 0.0, 0.5}));
}

TEST(VectorNorm, SixteenBitInputsAreComputedInFloat32) {
  for (DType dtype : {kFloat16, kBFloat16}) {
    // 300^2 * 4 overflows float16 (largest 65504); float32 does not.
    const Tensor x = full({4}, 300.0, dtype);
    const Tensor out = norm(x);
    EXPECT_EQ(out.dtype(), dtype);
    EXPECT_EQ(out.item<float>(), 600.0f);
  }
}

TEST(VectorNorm, Errors) {
  EXPECT_ERROR_CONTAINS(norm(ones({2}), -1.0), "norm: expected p >= 0, INFINITY or -INFINITY");
  EXPECT_ERROR_CONTAINS(norm(ones({2}, kInt64)), "norm: expected a floating-point tensor");
  EXPECT_ERROR_CONTAINS(norm(ones({2}), 2, {1}), "norm");
  EXPECT_ERROR_CONTAINS(norm(ones({2, 2}), 2, {1, -1}), "norm: dim -1 appears more than once");
  EXPECT_ERROR_CONTAINS(norm(Tensor()), "norm");
}

}  // namespace
}  // namespace minidl
