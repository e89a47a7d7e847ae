// sort, argsort and topk on the CPU: values and indices against PyTorch's
// (tests/ops/sort_reference.h, from tools/reference/make_sort_reference.py) over ties, NaNs, both
// directions, several dims and dtypes; f64 gradient checks; long rows; errors.
#include "minidl/ops/sort.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "minidl/core/autograd/gradcheck.h"
#include "minidl/ops/reduce.h"
#include "sort_reference.h"
#include "test_util.h"

namespace minidl {
namespace {

DType dtype_named(const std::string& name) {
  for (DType dtype : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool})
    if (dtype_name(dtype) == name) return dtype;
  ADD_FAILURE() << "unknown dtype " << name;
  return kFloat32;
}

Tensor reference_input(const testing::SortReference& reference) {
  return from_host(reference.input.data(), Shape(reference.shape), kFloat64)
      .to(dtype_named(reference.dtype));
}

// Equal element for element, NaN equal to NaN.
::testing::AssertionResult same_values(const std::vector<double>& actual,
                                       const std::vector<double>& expected) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure()
           << actual.size() << " values, expected " << expected.size();
  for (size_t i = 0; i < actual.size(); ++i) {
    const bool both_nan = std::isnan(actual[i]) && std::isnan(expected[i]);
    if (!both_nan && actual[i] != expected[i])
      return ::testing::AssertionFailure()
             << "element " << i << ": " << actual[i] << ", expected " << expected[i];
  }
  return ::testing::AssertionSuccess();
}

Shape result_shape(const testing::SortReference& reference) {
  Shape shape(reference.shape);
  if (reference.op == std::string("topk"))
    shape[wrap_dim(reference.dim, shape.size(), "")] = reference.k;
  return shape;
}

TEST(Sort, ValuesAndIndicesMatchPyTorch) {
  for (const testing::SortReference& reference : testing::kSortReferences) {
    SCOPED_TRACE(reference.name);
    const Tensor x = reference_input(reference);
    Tensor values, indices;
    if (reference.op == std::string("sort"))
      std::tie(values, indices) = sort(x, reference.dim, reference.descending);
    else
      std::tie(values, indices) = topk(x, reference.k, reference.dim, reference.descending);
    EXPECT_EQ(values.sizes(), result_shape(reference));
    EXPECT_EQ(values.dtype(), x.dtype());
    EXPECT_EQ(indices.dtype(), kInt64);
    EXPECT_TRUE(same_values(to_vector<double>(values), reference.values));
    EXPECT_EQ(to_vector<int64_t>(indices), reference.indices);
  }
}

TEST(Sort, ArgsortAndTheStableFlagGiveTheSameIndices) {
  for (const testing::SortReference& reference : testing::kSortReferences) {
    if (reference.op != std::string("sort")) continue;
    SCOPED_TRACE(reference.name);
    const Tensor x = reference_input(reference);
    EXPECT_EQ(to_vector<int64_t>(argsort(x, reference.dim, reference.descending)),
              reference.indices);
    EXPECT_EQ(to_vector<int64_t>(std::get<1>(sort(x, reference.dim, reference.descending,
                                                  /*stable=*/true))),
              reference.indices);
  }
}

TEST(Sort, IntegerAndNarrowDtypes) {
  const Tensor x = tensor(std::vector<int32_t>{5, -2, 7, -2, 0});
  auto [values, indices] = sort(x);
  EXPECT_EQ(to_vector<int32_t>(values), (std::vector<int32_t>{-2, -2, 0, 5, 7}));
  EXPECT_EQ(to_vector<int64_t>(indices), (std::vector<int64_t>{1, 3, 4, 0, 2}));
  const Tensor bytes = tensor(std::vector<uint8_t>{200, 3, 200, 17});
  auto [top, top_indices] = topk(bytes, 3);
  EXPECT_EQ(to_vector<uint8_t>(top), (std::vector<uint8_t>{200, 200, 17}));
  EXPECT_EQ(to_vector<int64_t>(top_indices), (std::vector<int64_t>{0, 2, 3}));
}

TEST(Sort, LongRowsAreSortedPermutations) {
  // A vocabulary-sized row, several threads' worth of rows.
  for (int64_t size : {int64_t{50257}, int64_t{65536}}) {
    SCOPED_TRACE(size);
    const Tensor x = testing::wiggly({2, size}, kFloat32, testing::Wiggle{.step = 0.0137});
    auto [values, indices] = sort(x, -1, /*descending=*/true);
    const std::vector<float> in = to_vector<float>(x), out = to_vector<float>(values);
    const std::vector<int64_t> positions = to_vector<int64_t>(indices);
    for (int64_t row = 0; row < 2; ++row) {
      std::vector<int64_t> seen(static_cast<size_t>(size), 0);
      for (int64_t j = 0; j < size; ++j) {
        const int64_t at = row * size + j;
        ASSERT_EQ(out[at], in[row * size + positions[at]]);
        if (j > 0) ASSERT_GE(out[at - 1], out[at]);
        ++seen[positions[at]];
      }
      EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), size);
    }
    auto [top, top_indices] = topk(x, 50);
    EXPECT_EQ(to_vector<float>(top), to_vector<float>(values.narrow(1, 0, 50).contiguous()));
    EXPECT_EQ(to_vector<int64_t>(top_indices),
              to_vector<int64_t>(indices.narrow(1, 0, 50).contiguous()));
  }
}

TEST(Sort, EmptyInputsAndKZero) {
  auto [values, indices] = sort(zeros({0, 3}), 1);
  EXPECT_EQ(values.sizes(), (Shape{0, 3}));
  EXPECT_EQ(indices.sizes(), (Shape{0, 3}));
  auto [none, none_indices] = topk(ones({2, 4}), 0);
  EXPECT_EQ(none.sizes(), (Shape{2, 0}));
  EXPECT_EQ(none_indices.sizes(), (Shape{2, 0}));
  // Backward through rows of no elements.
  Tensor empty_rows = zeros({3, 0}).requires_grad_();
  std::get<0>(sort(empty_rows, 1)).sum().backward();
  EXPECT_EQ(empty_rows.grad().sizes(), (Shape{3, 0}));
}

TEST(SortGradcheck, SortValuesAlongEachDim) {
  Tensor x = testing::wiggly({3, 4, 5}, 0.0, kFloat64).requires_grad_();
  for (int64_t dim : {0, 1, 2, -1}) {
    for (bool descending : {false, true}) {
      auto result = gradcheck(
          [&](const std::vector<Tensor>& in) { return std::get<0>(sort(in[0], dim, descending)); },
          {x});
      EXPECT_TRUE(result) << "dim " << dim << ": " << result.message;
    }
  }
}

TEST(SortGradcheck, TopkValues) {
  Tensor x = testing::wiggly({4, 6}, 0.3, kFloat64).requires_grad_();
  for (int64_t dim : {0, 1}) {
    for (bool largest : {true, false}) {
      auto result = gradcheck(
          [&](const std::vector<Tensor>& in) { return std::get<0>(topk(in[0], 3, dim, largest)); },
          {x});
      EXPECT_TRUE(result) << "dim " << dim << ": " << result.message;
    }
  }
}

TEST(SortGradcheck, TopkGradientGoesToTheSelectedPositionsOnly) {
  Tensor x = tensor({0.5, 3.0, -1.0, 2.0}, kFloat32).requires_grad_();
  auto [values, indices] = topk(x, 2);  // 3.0 (1), 2.0 (3)
  values.mul(tensor({10.0, 20.0}, kFloat32)).sum().backward();
  EXPECT_EQ(to_vector<float>(x.grad()), (std::vector<float>{0, 10, 0, 20}));
}

TEST(SortErrors, NameTheOpAndWhatWasExpected) {
  const Tensor x = ones({2, 5});
  EXPECT_ERROR_CONTAINS(topk(x, 6), "topk: k must be in [0, 5]");
  EXPECT_ERROR_CONTAINS(topk(x, -1), "topk: k must be in [0, 5]");
  EXPECT_ERROR_CONTAINS(topk(x, 1, 2), "topk: dimension out of range");
  EXPECT_ERROR_CONTAINS(sort(x, -3), "sort: dimension out of range");
  EXPECT_ERROR_CONTAINS(argsort(x, 2), "argsort: dimension out of range");
  EXPECT_ERROR_CONTAINS(topk(ones({3}, kBool), 1), "topk: expected a numeric tensor");
  EXPECT_ERROR_CONTAINS(sort(Tensor()), "sort: argument 'input' is an undefined tensor");
}

}  // namespace
}  // namespace minidl
