// masked_fill, tril and triu on the CPU: values against PyTorch's definitions, broadcasting,
// dtypes, the gradient (to the kept elements only), and errors.
#include "minidl/ops/masking.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "minidl/core/autograd/gradcheck.h"
#include "minidl/ops/elementwise.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;

Tensor bools(const std::vector<bool>& values, const Shape& sizes) { return tensor(values, sizes); }

TEST(MaskedFill, FillsWhereTheMaskIsTrueAndBroadcastsIt) {
  Tensor x = tensor({1, 2, 3, 4, 5, 6}, kFloat32).view({2, 3});
  Tensor mask = bools({true, false, true}, {3});  // broadcast over the rows
  EXPECT_EQ(to_vector<float>(x.masked_fill(mask, -1)), (std::vector<float>{-1, 2, -1, -1, 5, -1}));
  // -inf, as attention's masks use.
  Tensor filled = masked_fill(x, bools({false, false, false, true, true, true}, {2, 3}), -INFINITY);
  std::vector<float> values = to_vector<float>(filled);
  EXPECT_EQ(values[0], 1.0f);
  EXPECT_TRUE(std::isinf(values[5]) && values[5] < 0);
  // A mask with more dimensions broadcasts the result, as torch.masked_fill.
  EXPECT_EQ(masked_fill(x, bools({true, false}, {2, 1, 1}), 0).sizes(), (Shape{2, 2, 3}));
  // Integer tensors too.
  Tensor ints = arange(4);
  EXPECT_EQ(to_vector<int64_t>(ints.masked_fill(ints > 1.5, 9)),
            (std::vector<int64_t>{0, 1, 9, 9}));
}

TEST(MaskedFill, GradientReachesTheUnmaskedElementsOnly) {
  Tensor mask = bools({true, false, false, true, false, true}, {2, 3});
  auto result =
      gradcheck([&](const std::vector<Tensor>& in) { return masked_fill(in[0], mask, 0.5); },
                {testing::wiggly({2, 3}, 0.3, kFloat64).requires_grad_()});
  EXPECT_TRUE(result) << result.message;
  Tensor x = ones({2, 3}, kFloat64).requires_grad_();
  masked_fill(x, mask, 7).sum().backward();
  EXPECT_EQ(to_vector<double>(x.grad()), (std::vector<double>{0, 1, 1, 0, 1, 0}));
}

TEST(MaskedFill, BadMasksAreErrorsNamingTheOp) {
  Tensor x = zeros({2, 3});
  EXPECT_ERROR_CONTAINS(masked_fill(x, zeros({2, 3}), 1),
                        "masked_fill: expected a bool mask, got float32");
  EXPECT_ERROR_CONTAINS(masked_fill(x, bools({true, false}, {2}), 1),
                        "cannot be broadcast together");
  EXPECT_ERROR_CONTAINS(masked_fill(Tensor(), bools({true}, {1}), 1),
                        "masked_fill: argument 'input' is an undefined tensor");
}

// tril's definition, element by element: [.., i, j] kept when j - i <= diagonal.
std::vector<float> triangle_reference(const Tensor& x, int64_t diagonal, bool lower) {
  const int64_t rows = x.size(-2), cols = x.size(-1);
  std::vector<float> values = to_vector<float>(x);
  for (size_t k = 0; k < values.size(); ++k) {
    const int64_t i = static_cast<int64_t>(k) / cols % rows, j = static_cast<int64_t>(k) % cols;
    const bool keep = lower ? j - i <= diagonal : j - i >= diagonal;
    if (!keep) values[k] = 0;
  }
  return values;
}

TEST(Triangles, TrilAndTriuKeepTheirDiagonalsOverBatches) {
  Tensor x = arange(1, 25, 1, kFloat32).view({2, 3, 4});
  for (int64_t diagonal : {-2, -1, 0, 1, 3, 5}) {
    EXPECT_EQ(to_vector<float>(tril(x, diagonal)), triangle_reference(x, diagonal, true))
        << "tril " << diagonal;
    EXPECT_EQ(to_vector<float>(x.triu(diagonal)), triangle_reference(x, diagonal, false))
        << "triu " << diagonal;
  }
  // PyTorch's values for torch.ones(3, 4).tril(-1).
  EXPECT_EQ(to_vector<float>(ones({3, 4}).tril(-1)),
            (std::vector<float>{0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0}));
  // A transposed view, and integers.
  Tensor transposed = x.transpose(-2, -1);
  EXPECT_EQ(to_vector<float>(transposed.tril()),
            triangle_reference(transposed.contiguous(), 0, true));
  EXPECT_EQ(to_vector<int64_t>(ones({2, 2}, kInt64).triu(1)), (std::vector<int64_t>{0, 1, 0, 0}));
}

TEST(Triangles, GradientAndErrors) {
  auto result = gradcheck([](const std::vector<Tensor>& in) { return tril(in[0], 1); },
                          {testing::wiggly({2, 3, 3}, 0.1, kFloat64).requires_grad_()});
  EXPECT_TRUE(result) << result.message;
  EXPECT_ERROR_CONTAINS(tril(zeros({3})),
                        "tril: expected a tensor with at least 2 dimensions, got shape [3]");
  EXPECT_ERROR_CONTAINS(triu(Tensor()), "triu: argument 'input' is an undefined tensor");
}

}  // namespace
}  // namespace minidl
