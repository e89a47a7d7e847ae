// Reductions on the CPU: values against hand-worked results and a naive reference, dtypes,
// layouts (non-adjacent dims, transposed inputs, rows longer than one work block), errors, and
// f64 gradient checks.
#include "minidl/ops/reduce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <tuple>
#include <utility>
#include <vector>

#include "minidl/core/autograd/gradcheck.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/shape.h"
#include "minidl/ops/sort.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;

// Distinct, sign-mixed values (no ties), for inputs whose extremes must be unique.
std::vector<double> wiggly(int64_t n) {
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[i] = 3.0 * std::sin(1.0 + 0.7 * static_cast<double>(i));
  return values;
}

Tensor wiggly_tensor(const Shape& sizes, DType dtype = kFloat32) {
  std::vector<double> values = wiggly(shape_numel(sizes));
  return from_host(values.data(), sizes, kFloat64).to(dtype);
}

// The elements that fold into each output, in row-major order of the output, for a row-major
// `values` of shape `sizes` reduced over `dims`: the reference the kernels are compared with.
std::vector<std::vector<double>> groups(const std::vector<double>& values, const Shape& sizes,
                                        const std::vector<int64_t>& dims) {
  std::vector<bool> reduced(sizes.size(), false);
  for (int64_t d : dims) reduced[d] = true;
  int64_t outputs = 1;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (!reduced[d]) outputs *= sizes[d];
  std::vector<std::vector<double>> out(static_cast<size_t>(outputs));
  Shape index(sizes.size(), 0);
  for (double value : values) {
    int64_t output = 0;
    for (size_t d = 0; d < sizes.size(); ++d)
      if (!reduced[d]) output = output * sizes[d] + index[d];
    out[output].push_back(value);
    for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

Tensor reference(const std::vector<std::vector<double>>& groups, const Shape& sizes,
                 double (*fold)(const std::vector<double>&)) {
  std::vector<double> out;
  for (const auto& group : groups) out.push_back(fold(group));
  return from_host(out.data(), sizes, kFloat64);
}

double sum_of(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }
double mean_of(const std::vector<double>& v) { return sum_of(v) / static_cast<double>(v.size()); }
double max_of(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }
double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }
double argmax_of(const std::vector<double>& v) {
  return static_cast<double>(std::max_element(v.begin(), v.end()) - v.begin());
}
double argmin_of(const std::vector<double>& v) {
  return static_cast<double>(std::min_element(v.begin(), v.end()) - v.begin());
}
double sample_var_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  double squares = 0;
  for (double x : v) squares += (x - m) * (x - m);
  return squares / static_cast<double>(v.size() - 1);
}

// ---- sum ----

TEST(Sum, HandWorkedValuesAllElementsAndAlongDims) {
  Tensor x = arange(6, kFloat32).view({2, 3});  // [[0, 1, 2], [3, 4, 5]]
  EXPECT_EQ(sum(x).item<float>(), 15.0f);
  EXPECT_EQ(sum(x).dim(), 0);
  EXPECT_EQ(x.sum().item<float>(), 15.0f);
  EXPECT_EQ(to_vector<float>(sum(x, {0})), (std::vector<float>{3, 5, 7}));
  EXPECT_EQ(to_vector<float>(sum(x, {1})), (std::vector<float>{3, 12}));
  EXPECT_EQ(to_vector<float>(sum(x, {-1})), (std::vector<float>{3, 12}));
  EXPECT_EQ(sum(x, {1}, /*keepdim=*/true).sizes(), (Shape{2, 1}));
  EXPECT_EQ(sum(x, {0}, /*keepdim=*/true).sizes(), (Shape{1, 3}));
  EXPECT_EQ(sum(x, {0, 1}).item<float>(), 15.0f);
  EXPECT_EQ(sum(x, {}).item<float>(), 15.0f);  // an empty list means every dim, as torch
  // One integer dim, as x.sum(-1) in LibTorch; {} and {0} stay lists.
  EXPECT_EQ(to_vector<float>(x.sum(-1)), (std::vector<float>{3, 12}));
  EXPECT_EQ(sum(x, 1, /*keepdim=*/true).sizes(), (Shape{2, 1}));
  EXPECT_EQ(x.sum({}).item<float>(), 15.0f);
  EXPECT_EQ(to_vector<float>(x.mean(0)), (std::vector<float>{1.5, 2.5, 3.5}));
  EXPECT_EQ(mean(x, -1, /*keepdim=*/true).sizes(), (Shape{2, 1}));
}

TEST(Sum, MatchesReferenceForEveryDimSubsetAndLayout) {
  const Shape sizes{3, 4, 5};
  Tensor x = wiggly_tensor(sizes, kFloat64);
  const std::vector<double> values = wiggly(60);
  const std::vector<std::vector<int64_t>> subsets{{0}, {1}, {2}, {0, 1}, {1, 2}, {0, 2}, {0, 1, 2}};
  for (const auto& dims : subsets) {
    Shape kept;
    for (int64_t d = 0; d < 3; ++d)
      if (std::find(dims.begin(), dims.end(), d) == dims.end()) kept.push_back(sizes[d]);
    Tensor expected = reference(groups(values, sizes, dims), kept, sum_of);
    EXPECT_TRUE(all_close(sum(x, Shape(dims.begin(), dims.end())), expected, 1e-12, 1e-12))
        << "dims " << shape_str(Shape(dims.begin(), dims.end()));
    // The same reduction of a transposed (non-contiguous) view.
    Tensor transposed = x.transpose(0, 2).contiguous().transpose(0, 2);
    ASSERT_FALSE(transposed.is_contiguous());
    EXPECT_TRUE(
        all_close(sum(transposed, Shape(dims.begin(), dims.end())), expected, 1e-12, 1e-12));
  }
}

TEST(Sum, LongRowsAndColumnsSplitIntoBlocksStayExact) {
  // Integers are summed exactly, so any error in cutting rows into blocks shows.
  const int64_t n = 100003;  // several work blocks, and a ragged tail
  Tensor row = arange(n);
  EXPECT_EQ(sum(row).item<int64_t>(), n * (n - 1) / 2);
  Tensor columns = arange(3 * n).view({n, 3});  // reduce dim 0: columns 0, 1, 2 of 3
  std::vector<int64_t> column_sums = to_vector<int64_t>(sum(columns, {0}));
  for (int64_t c = 0; c < 3; ++c) EXPECT_EQ(column_sums[c], 3 * n * (n - 1) / 2 + c * n);
  // Floating-point long row: 1 + 1 + ... accumulates exactly in float up to 2^24.
  EXPECT_EQ(sum(ones({n})).item<float>(), static_cast<float>(n));
  EXPECT_EQ(to_vector<float>(sum(ones({2, n, 3}), {1})),
            std::vector<float>(6, static_cast<float>(n)));
}

TEST(Sum, IntegerAndBoolGiveInt64AndHalfKeepsItsDtype) {
  Tensor ints = tensor(std::vector<int32_t>{1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(sum(ints).dtype(), kInt64);
  EXPECT_EQ(sum(ints).item<int64_t>(), 10);
  EXPECT_EQ(to_vector<int64_t>(sum(ints, {0})), (std::vector<int64_t>{4, 6}));
  Tensor flags = tensor(std::vector<bool>{true, false, true});
  EXPECT_EQ(sum(flags).dtype(), kInt64);
  EXPECT_EQ(sum(flags).item<int64_t>(), 2);
  // 4096 halves of 1: a float16 accumulator would stall at 2048; float accumulation does not.
  Tensor halves = ones({4096}, kFloat16);
  EXPECT_EQ(sum(halves).dtype(), kFloat16);
  EXPECT_EQ(sum(halves).item<float>(), 4096.0f);
  EXPECT_EQ(sum(ones({4096}, kBFloat16)).item<float>(), 4096.0f);
}

TEST(Sum, EmptyDimGivesZeroAndZeroDimTensorReducesToItself) {
  Tensor empty_rows = zeros({2, 0});
  EXPECT_EQ(to_vector<float>(sum(empty_rows, {1})), (std::vector<float>{0, 0}));
  EXPECT_EQ(sum(empty_rows, {0}).sizes(), (Shape{0}));
  EXPECT_EQ(sum(zeros({0})).item<float>(), 0.0f);
  Tensor scalar = scalar_tensor(2.5);
  EXPECT_EQ(sum(scalar).item<float>(), 2.5f);
  EXPECT_EQ(sum(scalar, {0}).item<float>(), 2.5f);
  EXPECT_EQ(sum(scalar, {-1}, true).dim(), 0);
}

TEST(Sum, BadDimsAreErrorsNamingTheOp) {
  Tensor x = zeros({2, 3});
  EXPECT_ERROR_CONTAINS(sum(x, {1, -1}),
                        "sum: dim 1 appears more than once in the list of dims [1, -1]");
  EXPECT_ERROR_CONTAINS(sum(x, {2}),
                        "sum: dimension out of range (expected to be in [-2, 1], got 2)");
  EXPECT_ERROR_CONTAINS(mean(x, {0, 0}), "mean: dim 0 appears more than once");
  EXPECT_ERROR_CONTAINS(var(x, Shape{-3}), "var: dimension out of range");
}

// ---- mean ----

TEST(Mean, HandWorkedValues) {
  Tensor x = arange(6, kFloat32).view({2, 3});
  EXPECT_FLOAT_EQ(mean(x).item<float>(), 2.5f);
  EXPECT_EQ(to_vector<float>(mean(x, {0})), (std::vector<float>{1.5, 2.5, 3.5}));
  EXPECT_EQ(to_vector<float>(mean(x, {1}, true)), (std::vector<float>{1, 4}));
  EXPECT_EQ(mean(x, {1}, true).sizes(), (Shape{2, 1}));
  EXPECT_EQ(mean(ones({3}, kFloat16)).dtype(), kFloat16);
}

TEST(Mean, MatchesReferenceOnNonAdjacentDims) {
  const Shape sizes{3, 4, 5};
  Tensor x = wiggly_tensor(sizes, kFloat64);
  Tensor expected = reference(groups(wiggly(60), sizes, {0, 2}), {4}, mean_of);
  EXPECT_TRUE(all_close(mean(x, {0, 2}), expected, 1e-12, 1e-12));
  EXPECT_TRUE(all_close(mean(x, {2, 0}, true), expected.view({1, 4, 1}), 1e-12, 1e-12));
}

TEST(Mean, EmptyIsNaNAndIntegersAreRefused) {
  EXPECT_TRUE(std::isnan(mean(zeros({0})).item<float>()));
  std::vector<float> per_row = to_vector<float>(mean(zeros({2, 0}), {1}));
  EXPECT_TRUE(std::isnan(per_row[0]) && std::isnan(per_row[1]));
  EXPECT_ERROR_CONTAINS(mean(arange(4)), "mean: expected a floating-point tensor");
  EXPECT_ERROR_CONTAINS(mean(arange(4)), "got int64");
}

// ---- max, min, argmax ----

TEST(MaxMin, HandWorkedValuesAllElementsAndAlongADim) {
  Tensor x = tensor({3, -1, 7, 2, 8, -5}, kFloat32).view({2, 3});
  EXPECT_EQ(max(x).item<float>(), 8.0f);
  EXPECT_EQ(min(x).item<float>(), -5.0f);
  EXPECT_EQ(x.max().item<float>(), 8.0f);
  EXPECT_EQ(to_vector<float>(std::get<0>(max(x, 1))), (std::vector<float>{7, 8}));
  EXPECT_EQ(to_vector<float>(std::get<0>(min(x, 0))), (std::vector<float>{2, -1, -5}));
  EXPECT_EQ(to_vector<float>(std::get<0>(max(x, -2, true))), (std::vector<float>{3, 8, 7}));
  EXPECT_EQ(std::get<0>(max(x, 0, true)).sizes(), (Shape{1, 3}));
  EXPECT_EQ(max(tensor(std::vector<int32_t>{4, 9, 1})).item<int32_t>(), 9);
  EXPECT_EQ(std::get<0>(min(x.t(), 1)).sizes(), (Shape{3}));
  EXPECT_EQ(to_vector<float>(std::get<0>(min(x.t(), 1))), (std::vector<float>{2, -1, -5}));
}

TEST(MaxMin, MatchReferenceOnEveryDimOfA3dTensor) {
  const Shape sizes{3, 4, 5};
  Tensor x = wiggly_tensor(sizes, kFloat64);
  for (int64_t d = 0; d < 3; ++d) {
    Shape kept = sizes;
    kept.erase(kept.begin() + d);
    auto g = groups(wiggly(60), sizes, {d});
    auto [max_values, max_indices] = max(x, d);
    auto [min_values, min_indices] = min(x, d);
    EXPECT_TRUE(all_close(max_values, reference(g, kept, max_of), 0, 0)) << "dim " << d;
    EXPECT_TRUE(all_close(min_values, reference(g, kept, min_of), 0, 0)) << "dim " << d;
    EXPECT_TRUE(all_close(max_indices, reference(g, kept, argmax_of), 0, 0)) << "dim " << d;
    EXPECT_TRUE(all_close(min_indices, reference(g, kept, argmin_of), 0, 0)) << "dim " << d;
    EXPECT_TRUE(all_close(argmax(x, d), reference(g, kept, argmax_of), 0, 0)) << "dim " << d;
  }
}

TEST(MaxMin, NaNPropagatesAsPyTorch) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = tensor({1.0, nan, 3.0, 4.0, 5.0, 6.0}).view({2, 3});
  EXPECT_TRUE(std::isnan(max(x).item<float>()));
  EXPECT_TRUE(std::isnan(min(x).item<float>()));
  std::vector<float> row_max = to_vector<float>(std::get<0>(max(x, 1)));
  EXPECT_TRUE(std::isnan(row_max[0]));
  EXPECT_EQ(row_max[1], 6.0f);
  EXPECT_EQ(argmax(x).item<int64_t>(), 1);  // NaN counts as the maximum
}

TEST(Argmax, FirstIndexOfTiesFlatAndAlongADim) {
  Tensor x = tensor({1, 5, 5, 5, 2, 5}, kFloat32).view({2, 3});
  EXPECT_EQ(argmax(x).dtype(), kInt64);
  EXPECT_EQ(argmax(x).item<int64_t>(), 1);  // index into the flattened tensor
  EXPECT_EQ(to_vector<int64_t>(argmax(x, 1)), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(to_vector<int64_t>(argmax(x, 0)), (std::vector<int64_t>{1, 0, 0}));
  EXPECT_EQ(x.argmax(1, true).sizes(), (Shape{2, 1}));
  // Ties across work blocks of a long row: the first one still wins.
  Tensor long_row = zeros({50000});
  EXPECT_EQ(argmax(long_row).item<int64_t>(), 0);
}

TEST(MaxMin, EmptyReductionsAreErrorsNamingTheOp) {
  EXPECT_ERROR_CONTAINS(max(zeros({0, 3})),
                        "max: cannot reduce a tensor with no elements (shape [0, 3])");
  EXPECT_ERROR_CONTAINS(min(zeros({0})), "min: cannot reduce a tensor with no elements");
  EXPECT_ERROR_CONTAINS(argmax(zeros({2, 0})), "argmax: cannot reduce a tensor with no elements");
  EXPECT_ERROR_CONTAINS(
      std::get<0>(max(zeros({2, 0}), 1)),
      "max: expected a non-empty dim to reduce, but dim 1 of shape [2, 0] has size 0");
  EXPECT_ERROR_CONTAINS(argmax(zeros({0, 2}), 0), "argmax: expected a non-empty dim to reduce");
  // Only the reduced dim must be non-empty.
  EXPECT_EQ(std::get<0>(max(zeros({0, 2}), 1)).sizes(), (Shape{0}));
  EXPECT_EQ(std::get<1>(max(zeros({0, 2}), 1)).sizes(), (Shape{0}));
  EXPECT_ERROR_CONTAINS(max(zeros({2}), 1), "max: dimension out of range");
}

TEST(MaxMin, GradientGoesToTheFirstExtremeElement) {
  Tensor x = tensor({1.0, 3.0, 3.0, 0.0}).requires_grad_();
  max(x).backward();
  EXPECT_EQ(to_vector<float>(x.grad()), (std::vector<float>{0, 1, 0, 0}));
  Tensor y = tensor({2.0, 0.0, 0.0, 2.0, 1.0, 2.0}).view({2, 3}).requires_grad_();
  std::get<0>(min(y, 1)).backward(ones({2}));
  EXPECT_EQ(to_vector<float>(y.grad()), (std::vector<float>{0, 1, 0, 0, 1, 0}));
}

// ---- max(x, dim) and min(x, dim): (values, indices), as torch::max(x, dim) ----

TEST(MaxMinDim, ReturnValuesAndInt64IndicesAlongTheDim) {
  Tensor x = tensor({3, -1, 7, 2, 8, -5}, kFloat32).view({2, 3});  // [[3, -1, 7], [2, 8, -5]]
  auto [row_max, row_argmax] = max(x, 1);
  EXPECT_EQ(to_vector<float>(row_max), (std::vector<float>{7, 8}));
  EXPECT_EQ(row_argmax.dtype(), kInt64);
  EXPECT_EQ(to_vector<int64_t>(row_argmax), (std::vector<int64_t>{2, 1}));
  auto [column_min, column_argmin] = min(x, 0);
  EXPECT_EQ(to_vector<float>(column_min), (std::vector<float>{2, -1, -5}));
  EXPECT_EQ(to_vector<int64_t>(column_argmin), (std::vector<int64_t>{1, 0, 1}));
  auto [kept_values, kept_indices] = min(x, -1, /*keepdim=*/true);
  EXPECT_EQ(kept_values.sizes(), (Shape{2, 1}));
  EXPECT_EQ(kept_indices.sizes(), (Shape{2, 1}));
  EXPECT_EQ(to_vector<float>(kept_values), (std::vector<float>{-1, -5}));
  EXPECT_EQ(to_vector<int64_t>(kept_indices), (std::vector<int64_t>{1, 2}));
  // The indices are where the values are: gathering x at them gives the values back.
  for (int64_t row = 0; row < 2; ++row)
    EXPECT_EQ(x.select(0, row).select(0, to_vector<int64_t>(row_argmax)[row]).item<float>(),
              to_vector<float>(row_max)[row]);
}

TEST(MaxMinDim, TensorMethodsMatchTheFreeFunctions) {
  Tensor x = wiggly_tensor({3, 4, 5});
  for (int64_t dim : {0, 1, 2, -1}) {
    for (bool keepdim : {false, true}) {
      auto [method_values, method_indices] = x.max(dim, keepdim);
      auto [values, indices] = max(x, dim, keepdim);
      EXPECT_TRUE(all_close(method_values, values, 0, 0)) << dim << " " << keepdim;
      EXPECT_EQ(to_vector<int64_t>(method_indices), to_vector<int64_t>(indices));
      EXPECT_EQ(to_vector<int64_t>(indices), to_vector<int64_t>(argmax(x, dim, keepdim)));
      auto [min_method_values, min_method_indices] = x.min(dim, keepdim);
      auto [min_values, min_indices] = min(x, dim, keepdim);
      EXPECT_TRUE(all_close(min_method_values, min_values, 0, 0)) << dim << " " << keepdim;
      EXPECT_EQ(to_vector<int64_t>(min_method_indices), to_vector<int64_t>(min_indices));
    }
  }
}

TEST(MaxMinDim, TiesGiveTheFirstIndex) {
  Tensor x = tensor({1, 5, 5, 5, 2, 5, 0, 0, 0}, kFloat32).view({3, 3});
  EXPECT_EQ(to_vector<int64_t>(std::get<1>(max(x, 1))), (std::vector<int64_t>{1, 0, 0}));
  EXPECT_EQ(to_vector<int64_t>(std::get<1>(min(x, 1))), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(to_vector<int64_t>(std::get<1>(max(x, 0))), (std::vector<int64_t>{1, 0, 0}));
  // Across the work blocks of a long row, too.
  EXPECT_EQ(std::get<1>(min(zeros({3, 50000}), 1)).sizes(), (Shape{3}));
  EXPECT_EQ(to_vector<int64_t>(std::get<1>(min(zeros({3, 50000}), 1))),
            (std::vector<int64_t>{0, 0, 0}));
}

TEST(MaxMinDim, IntegerInputsAndNaN) {
  auto [values, indices] = max(tensor(std::vector<int32_t>{4, 9, 7, 9}, {2, 2}), 0);
  EXPECT_EQ(values.dtype(), kInt32);
  EXPECT_EQ(to_vector<int32_t>(values), (std::vector<int32_t>{7, 9}));
  EXPECT_EQ(to_vector<int64_t>(indices), (std::vector<int64_t>{1, 0}));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto [nan_values, nan_indices] = min(tensor({1.0, nan, -3.0}), 0);
  EXPECT_TRUE(std::isnan(nan_values.item<float>()));  // NaN wins, as in PyTorch
  EXPECT_EQ(nan_indices.item<int64_t>(), 1);
}

TEST(MaxMinDim, GradientGoesToTheSelectedIndexOnly) {
  // Ties: the whole gradient of each row goes to the element the index names (PyTorch's
  // max.dim backward), not shared among the equal elements.
  Tensor x = tensor({4.0, 4.0, 1.0, 0.0, 2.0, 2.0}).view({2, 3}).requires_grad_();
  auto [values, indices] = max(x, 1);
  EXPECT_EQ(to_vector<int64_t>(indices), (std::vector<int64_t>{0, 1}));
  EXPECT_FALSE(indices.requires_grad());
  ASSERT_TRUE(values.requires_grad());
  values.backward(tensor({10.0, 20.0}));
  EXPECT_EQ(to_vector<float>(x.grad()), (std::vector<float>{10, 0, 0, 0, 20, 0}));
}

TEST(MaxMinDim, ChangingTheReturnedIndicesInPlaceIsCaughtAtBackward) {
  Tensor x = wiggly_tensor({2, 3}).requires_grad_();
  auto [values, indices] = min(x, 1);
  indices.add_(1);  // would send the gradient to the wrong elements
  EXPECT_ERROR_CONTAINS(values.sum().backward(), "min backward: a tensor of shape [2]");
}

// ---- var ----

TEST(Var, HandWorkedValuesWithAndWithoutBessel) {
  Tensor x = tensor({1, 2, 3, 4}, kFloat32);  // mean 2.5, squared deviations sum to 5
  EXPECT_FLOAT_EQ(var(x).item<float>(), 5.0f / 3.0f);
  EXPECT_FLOAT_EQ(var(x, {}, 0).item<float>(), 5.0f / 4.0f);
  Tensor rows = tensor({1, 2, 3, 4, 2, 4, 6, 8}, kFloat32).view({2, 4});
  std::vector<float> per_row = to_vector<float>(var(rows, {1}));  // dims, not a correction
  EXPECT_FLOAT_EQ(per_row[0], 5.0f / 3.0f);
  EXPECT_FLOAT_EQ(per_row[1], 20.0f / 3.0f);
  EXPECT_EQ(var(rows, Shape{1}, 1, true).sizes(), (Shape{2, 1}));
  EXPECT_TRUE(std::isnan(var(tensor({7.0})).item<float>()));  // 0 / 0, as torch.var
  EXPECT_ERROR_CONTAINS(var(arange(3)), "var: expected a floating-point tensor");
}

TEST(Var, MatchesReferenceOnLargeOffsetData) {
  // Values near 1e4 with a spread of a few units: a naive E[x^2] - E[x]^2 in float would lose
  // most digits; Welford keeps them.
  const Shape sizes{4, 3000};
  std::vector<double> values = wiggly(12000);
  for (double& v : values) v += 1e4;
  Tensor x = from_host(values.data(), sizes, kFloat64).to(kFloat32);
  Tensor expected = reference(groups(values, sizes, {1}), {4}, sample_var_of);
  EXPECT_TRUE(all_close(var(x, Shape{1}), expected, 1e-3, 1e-3));
  EXPECT_TRUE(all_close(var(x.t(), Shape{0}), expected, 1e-3, 1e-3));
}

// ---- gradients (f64 central differences) ----

std::vector<Tensor> inputs_of(const Tensor& x) { return {x}; }

TEST(ReduceGradcheck, SumOverDimsKeepdimAndTransposedInput) {
  Tensor x = wiggly_tensor({3, 4, 2}, kFloat64).requires_grad_();
  for (bool keepdim : {false, true}) {
    for (const Shape& dims : {Shape{0}, Shape{1}, Shape{-1}, Shape{0, 2}, Shape{0, 1, 2}}) {
      auto result = gradcheck(
          [&](const std::vector<Tensor>& in) { return sum(in[0], dims, keepdim); }, inputs_of(x));
      EXPECT_TRUE(result) << result.message;
    }
  }
  auto full = gradcheck([](const std::vector<Tensor>& in) { return sum(in[0]); }, inputs_of(x));
  EXPECT_TRUE(full) << full.message;
  auto transposed = gradcheck(
      [](const std::vector<Tensor>& in) { return sum(in[0].transpose(0, 2), {1}); }, inputs_of(x));
  EXPECT_TRUE(transposed) << transposed.message;
}

TEST(ReduceGradcheck, Mean) {
  Tensor x = wiggly_tensor({3, 4}, kFloat64).requires_grad_();
  for (const Shape& dims : {Shape{0}, Shape{1}, Shape{0, 1}}) {
    auto result = gradcheck([&](const std::vector<Tensor>& in) { return mean(in[0], dims, true); },
                            inputs_of(x));
    EXPECT_TRUE(result) << result.message;
  }
  auto transposed =
      gradcheck([](const std::vector<Tensor>& in) { return mean(in[0].t()); }, inputs_of(x));
  EXPECT_TRUE(transposed) << transposed.message;
}

TEST(ReduceGradcheck, MaxAndMinAllElementsAndAlongDims) {
  Tensor x = wiggly_tensor({3, 4, 2}, kFloat64).requires_grad_();  // distinct values: no ties
  for (int64_t dim : {0, 1, -1}) {
    for (bool keepdim : {false, true}) {
      auto mx = gradcheck(
          [&](const std::vector<Tensor>& in) { return std::get<0>(max(in[0], dim, keepdim)); },
          inputs_of(x));
      EXPECT_TRUE(mx) << mx.message;
      auto mn = gradcheck(
          [&](const std::vector<Tensor>& in) { return std::get<0>(min(in[0], dim, keepdim)); },
          inputs_of(x));
      EXPECT_TRUE(mn) << mn.message;
    }
  }
  auto full_max = gradcheck([](const std::vector<Tensor>& in) { return max(in[0]); }, inputs_of(x));
  EXPECT_TRUE(full_max) << full_max.message;
  auto transposed = gradcheck(
      [](const std::vector<Tensor>& in) { return std::get<0>(min(in[0].transpose(0, 1), 0)); },
      inputs_of(x));
  EXPECT_TRUE(transposed) << transposed.message;
}

TEST(ReduceGradcheck, VarWithCorrections) {
  Tensor x = wiggly_tensor({3, 4}, kFloat64).requires_grad_();
  for (int64_t correction : {0, 1}) {
    for (const Shape& dims : {Shape{0}, Shape{1}, Shape{0, 1}}) {
      auto result = gradcheck(
          [&](const std::vector<Tensor>& in) { return var(in[0], dims, correction, true); },
          inputs_of(x));
      EXPECT_TRUE(result) << result.message;
    }
  }
  auto full = gradcheck([](const std::vector<Tensor>& in) { return var(in[0].t()); }, inputs_of(x));
  EXPECT_TRUE(full) << full.message;
}

}  // namespace
}  // namespace minidl

namespace minidl {
namespace {

// ---- the derived reductions: amax, amin, logsumexp, std, any, all ----

// log(sum(exp(x))) over the last dim of a [rows, cols] float64 tensor, by the definition.
std::vector<double> naive_logsumexp_rows(const Tensor& x) {
  const std::vector<double> values = to_vector<double>(x);
  const int64_t rows = x.size(0), cols = x.size(1);
  std::vector<double> out;
  for (int64_t r = 0; r < rows; ++r) {
    double total = 0;
    for (int64_t c = 0; c < cols; ++c) total += std::exp(values[r * cols + c]);
    out.push_back(std::log(total));
  }
  return out;
}

TEST(Logsumexp, MatchesTheDefinitionOverDimsAndStaysFiniteForLargeValues) {
  Tensor x = testing::wiggly({3, 4, 5}, 0.2, kFloat64) * 3.0;
  // Over the last dim, then over dims {0, 2} against the same rows laid out last.
  EXPECT_TRUE(all_close(logsumexp(x.reshape({12, 5}), {1}),
                        tensor(naive_logsumexp_rows(x.reshape({12, 5})), {12}).to(kFloat64), 1e-14,
                        1e-14));
  Tensor rows = x.permute({1, 0, 2}).reshape({4, 15});
  EXPECT_TRUE(all_close(logsumexp(x, {0, 2}), tensor(naive_logsumexp_rows(rows), {4}).to(kFloat64),
                        1e-14, 1e-14));
  EXPECT_EQ(logsumexp(x, {0, -1}, /*keepdim=*/true).sizes(), (Shape{1, 4, 1}));
  EXPECT_EQ(logsumexp(x, {}).sizes(), (Shape{}));
  // 1000 + log(2): no overflow; -inf rows stay -inf.
  Tensor big = tensor({1000.0, 1000.0, -INFINITY, -INFINITY}, kFloat32).view({2, 2});
  const std::vector<float> values = to_vector<float>(logsumexp(big, {1}));
  EXPECT_FLOAT_EQ(values[0], 1000.0f + std::log(2.0f));
  EXPECT_TRUE(std::isinf(values[1]) && values[1] < 0);
  EXPECT_ERROR_CONTAINS(logsumexp(arange(3), {0}), "logsumexp: expected a floating-point tensor");
  EXPECT_ERROR_CONTAINS(logsumexp(x, {1, 1}), "logsumexp: dim 1 appears more than once in [1, 1]");
}

TEST(Logsumexp, GradientIsTheSoftmax) {
  auto result = gradcheck(
      [](const std::vector<Tensor>& in) {
        return logsumexp(in[0], {0, 2});
      },
      {testing::wiggly({2, 3, 4}, 0.4, kFloat64).requires_grad_()});
  EXPECT_TRUE(result) << result.message;
}

TEST(AmaxAmin, OverSeveralDimsWithKeepdim) {
  Tensor x = arange(0, 24, 1, kFloat32).view({2, 3, 4}).sin();
  const std::vector<float> values = to_vector<float>(x);
  // amax over dims {0, 2}: for each j the largest of x[i][j][k].
  std::vector<float> expected(3, -INFINITY), expected_min(3, INFINITY);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k) {
        expected[j] = std::max(expected[j], values[(i * 3 + j) * 4 + k]);
        expected_min[j] = std::min(expected_min[j], values[(i * 3 + j) * 4 + k]);
      }
  EXPECT_EQ(to_vector<float>(amax(x, {0, 2})), expected);
  EXPECT_EQ(to_vector<float>(amin(x, {2, 0})), expected_min);
  EXPECT_EQ(amax(x, {0, 2}, true).sizes(), (Shape{1, 3, 1}));
  EXPECT_EQ(amax(x).item<float>(), *std::max_element(values.begin(), values.end()));
  EXPECT_EQ(amin(arange(5)).item<int64_t>(), 0);
  auto result = gradcheck([](const std::vector<Tensor>& in) { return amax(in[0], {1}); },
                          {testing::wiggly({3, 4}, 0.1, kFloat64).requires_grad_()});
  EXPECT_TRUE(result) << result.message;
  EXPECT_ERROR_CONTAINS(amax(zeros({2, 0}), {1}), "amax: expected a non-empty reduction");
}

TEST(Std, IsTheSquareRootOfVar) {
  Tensor x = testing::wiggly({4, 5}, 0.3, kFloat64);
  EXPECT_TRUE(all_close(std(x, {1}), sqrt(var(x, {1})), 0, 0));
  EXPECT_TRUE(all_close(std(x, {0}, 0, true), sqrt(var(x, {0}, 0, true)), 0, 0));
  EXPECT_TRUE(all_close(std(x), sqrt(var(x)), 0, 0));
}

TEST(AnyAll, OverDimsOfEveryDtype) {
  Tensor x = tensor({0.0, 0.0, 1.0, 0.0, NAN, 2.0}, kFloat32).view({2, 3});
  EXPECT_EQ(to_vector<bool>(any(x, {1})), (std::vector<bool>{true, true}));
  EXPECT_EQ(to_vector<bool>(all(x, {1})), (std::vector<bool>{false, false}));
  EXPECT_EQ(to_vector<bool>(any(x, {0})), (std::vector<bool>{false, true, true}));
  EXPECT_EQ(to_vector<bool>(all(x, {0})), (std::vector<bool>{false, false, true}));  // NaN != 0
  EXPECT_FALSE(any(zeros({3}, kInt64)).item<bool>());
  EXPECT_TRUE(all(ones({2, 2}, kBool)).item<bool>());
  EXPECT_EQ(any(x, {1}, true).sizes(), (Shape{2, 1}));
  EXPECT_EQ(any(x, {1}).dtype(), kBool);
  EXPECT_TRUE(all(zeros({0})).item<bool>());  // every element of nothing, as torch.all
}

}  // namespace
}  // namespace minidl

namespace minidl {
namespace {

TEST(TensorMethods, ReductionsSortingAndRearrangingEqualTheFreeFunctions) {
  const Tensor x = testing::wiggly({3, 4}, 0.6, kFloat64);
  EXPECT_TRUE(all_close(x.var({1}), var(x, {1}), 0, 0));
  EXPECT_TRUE(all_close(x.std(), std(x), 0, 0));
  EXPECT_TRUE(all_close(x.std({0}, 0, true), std(x, {0}, 0, true), 0, 0));
  EXPECT_TRUE(all_close(x.amax({1}), amax(x, {1}), 0, 0));
  EXPECT_TRUE(all_close(x.amin(), amin(x), 0, 0));
  EXPECT_TRUE(all_close(x.logsumexp({0}, true), logsumexp(x, {0}, true), 0, 0));
  EXPECT_EQ(to_vector<bool>(x.any({1})), to_vector<bool>(any(x, {1})));
  EXPECT_EQ(to_vector<bool>((x > 0.0).all({0})), to_vector<bool>(all(x > 0.0, {0})));
  const auto [values, indices] = x.sort(1, true);
  EXPECT_TRUE(all_close(values, std::get<0>(sort(x, 1, true)), 0, 0));
  EXPECT_EQ(to_vector<int64_t>(indices), to_vector<int64_t>(x.argsort(1, true)));
  EXPECT_TRUE(all_close(std::get<0>(x.topk(2)), std::get<0>(topk(x, 2)), 0, 0));
  EXPECT_TRUE(all_close(x.flip({0}), flip(x, {0}), 0, 0));
  EXPECT_TRUE(all_close(x.roll({1}, {1}), roll(x, {1}, {1}), 0, 0));
  EXPECT_TRUE(all_close(x.repeat({2, 1}), repeat(x, {2, 1}), 0, 0));
  EXPECT_TRUE(all_close(x.repeat_interleave(2, 0), repeat_interleave(x, 2, 0), 0, 0));
  EXPECT_EQ(x.mT().sizes(), (Shape{4, 3}));
  EXPECT_TRUE(all_close(x.mT(), x.t(), 0, 0));
}

}  // namespace
}  // namespace minidl
