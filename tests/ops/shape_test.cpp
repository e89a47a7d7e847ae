// cat, stack, index_select and one_hot on the CPU: hand-worked values, non-contiguous inputs,
// errors, hand-worked gradients and f64 gradient checks.
#include "minidl/ops/shape.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "minidl/core/autograd/gradcheck.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;

// A float64 leaf of distinct values that requires grad, for gradient checks.
Tensor leaf(const Shape& sizes, double phase = 0.0) {
  return testing::wiggly(sizes, phase, kFloat64).requires_grad_();
}

Tensor indices(const std::vector<int64_t>& values) { return tensor(values); }

// ---- cat ----

// ---- split, chunk, unbind ----

std::vector<Shape> shapes_of(const std::vector<Tensor>& pieces) {
  std::vector<Shape> shapes;
  for (const Tensor& piece : pieces) shapes.push_back(piece.sizes());
  return shapes;
}

TEST(Split, PiecesOfASizeOrOfGivenSizesAreViewsAsTorch) {
  Tensor x = arange(0, 10, 1, kFloat32).view({2, 5});
  std::vector<Tensor> pieces = x.split(2, 1);
  EXPECT_EQ(shapes_of(pieces), (std::vector<Shape>{{2, 2}, {2, 2}, {2, 1}}));
  EXPECT_EQ(to_vector<float>(pieces[2]), (std::vector<float>{4, 9}));
  EXPECT_EQ(pieces[1].data_ptr<float>(), x.data_ptr<float>() + 2);  // a view, no copy
  // A list of sizes, also as split_with_sizes; {3} is the list [3], as in PyTorch.
  EXPECT_EQ(shapes_of(split(x, Shape{1, 4}, -1)), (std::vector<Shape>{{2, 1}, {2, 4}}));
  EXPECT_EQ(shapes_of(x.split_with_sizes({2, 0, 3}, 1)),
            (std::vector<Shape>{{2, 2}, {2, 0}, {2, 3}}));
  EXPECT_EQ(shapes_of(x.split({2})), (std::vector<Shape>{{2, 5}}));
  EXPECT_EQ(shapes_of(x.split(3)), (std::vector<Shape>{{2, 5}}));
  // GPT's q, k, v = qkv.split(n_embd, 2).
  auto qkv = zeros({4, 7, 3 * 8}).split(8, 2);
  ASSERT_EQ(qkv.size(), 3u);
  EXPECT_EQ(qkv[2].sizes(), (Shape{4, 7, 8}));
  EXPECT_EQ(shapes_of(zeros({0}).split(2)), (std::vector<Shape>{{0}}));
}

TEST(Split, ChunkAndUnbindAsTorch) {
  Tensor x = arange(0, 5, 1, kFloat32);
  EXPECT_EQ(shapes_of(x.chunk(4)), (std::vector<Shape>{{2}, {2}, {1}}));  // fewer, as torch
  EXPECT_EQ(shapes_of(chunk(zeros({6, 2}), 3)), (std::vector<Shape>{{2, 2}, {2, 2}, {2, 2}}));
  EXPECT_EQ(shapes_of(zeros({0}).chunk(3)), (std::vector<Shape>{{0}, {0}, {0}}));
  std::vector<Tensor> rows = unbind(arange(0, 6, 1, kFloat32).view({2, 3}), 1);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(to_vector<float>(rows[1]), (std::vector<float>{1, 4}));
}

TEST(Split, GradientFlowsBackToEachPiece) {
  auto result = gradcheck(
      [](const std::vector<Tensor>& in) {
        std::vector<Tensor> pieces = in[0].split(2, 1);
        std::vector<Tensor> chunks = in[0].chunk(2, 0);
        return pieces[0] * 2 + pieces[1] * pieces[1] + chunks[1].sum() + in[0].unbind(1)[4].sum();
      },
      {testing::wiggly({2, 5}, 0.2, kFloat64).requires_grad_()});
  EXPECT_TRUE(result) << result.message;
}

TEST(Split, BadArgumentsAreErrorsNamingTheOp) {
  Tensor x = zeros({2, 5});
  EXPECT_ERROR_CONTAINS(x.split(0, 1),
                        "split: expected a split_size > 0 (0 only for a dimension "
                        "of size 0), got 0 for dimension 1 of size 5");
  EXPECT_ERROR_CONTAINS(x.split({2, 2}, 1),
                        "split: split_sizes [2, 2] add up to 4, but dimension "
                        "1 of shape [2, 5] has size 5");
  EXPECT_ERROR_CONTAINS(x.chunk(0), "chunk: expected chunks > 0, got 0");
  EXPECT_ERROR_CONTAINS(scalar_tensor(1).unbind(),
                        "unbind: expected a tensor with at least one dimension, got a 0-d one");
  EXPECT_ERROR_CONTAINS(x.split(2, 3), "split");
}

TEST(Cat, JoinsAlongEachDimension) {
  Tensor a = arange(6, kFloat32).view({2, 3});         // [[0, 1, 2], [3, 4, 5]]
  Tensor b = arange(6, 12, 1, kFloat32).view({2, 3});  // [[6, 7, 8], [9, 10, 11]]
  Tensor rows = cat({a, b}, 0);
  EXPECT_EQ(rows.sizes(), (Shape{4, 3}));
  EXPECT_EQ(to_vector<float>(rows), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  Tensor columns = cat({a, b}, -1);
  EXPECT_EQ(columns.sizes(), (Shape{2, 6}));
  EXPECT_EQ(to_vector<float>(columns), (std::vector<float>{0, 1, 2, 6, 7, 8, 3, 4, 5, 9, 10, 11}));
}

TEST(Cat, UnequalLengthsNonContiguousAndEmptyInputs) {
  Tensor a = arange(6, kFloat32).view({3, 2}).t();  // [[0, 2, 4], [1, 3, 5]]
  Tensor b = full({2, 1}, 7);
  Tensor nothing = zeros({2, 0});
  Tensor out = cat({a, nothing, b}, 1);
  EXPECT_EQ(out.sizes(), (Shape{2, 4}));
  EXPECT_EQ(to_vector<float>(out), (std::vector<float>{0, 2, 4, 7, 1, 3, 5, 7}));
  EXPECT_TRUE(out.is_contiguous());
  EXPECT_EQ(to_vector<int64_t>(cat({arange(3)}, 0)), (std::vector<int64_t>{0, 1, 2}));
}

TEST(Cat, KeepsTheInputsMemoryFormatWhenTheyShareOne) {
  // PyTorch's rule: all channels-last gives channels-last; a mix gives contiguous.
  const Tensor a = arange(24, kFloat32).view({2, 3, 2, 2}).contiguous(MemoryFormat::ChannelsLast);
  const Tensor b = arange(16, kFloat32).add(100.0).view({2, 2, 2, 2});
  const Tensor b_last = b.contiguous(MemoryFormat::ChannelsLast);
  const Tensor both_last = cat({a, b_last}, 1), mixed = cat({a, b}, 1);
  EXPECT_TRUE(both_last.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(mixed.is_contiguous());
  // The values do not depend on the layout.
  EXPECT_TRUE(testing::bitwise_equal(both_last.contiguous(), mixed));
  EXPECT_TRUE(testing::bitwise_equal(mixed.narrow(1, 3, 2), b));
}

TEST(Cat, BadInputsAreErrors) {
  EXPECT_ERROR_CONTAINS(cat({}, 0), "cat: expected a non-empty list of tensors");
  EXPECT_ERROR_CONTAINS(cat({zeros({2, 3}), zeros({3, 3})}, 1),
                        "cat: expected tensors of equal shape except in dimension 1, got [2, 3] "
                        "at position 0 and [3, 3] at position 1");
  EXPECT_ERROR_CONTAINS(cat({zeros({2, 3}), zeros({2, 3, 1})}, 0),
                        "cat: expected tensors of equal shape except in dimension 0, got [2, 3] "
                        "at position 0 and [2, 3, 1] at position 1");
  EXPECT_ERROR_CONTAINS(cat({zeros({2}), zeros({2}, kFloat64)}, 0),
                        "cat: expected tensors of one dtype and device, got float32 on cpu at "
                        "position 0 and float64 on cpu at position 1");
  EXPECT_ERROR_CONTAINS(cat({scalar_tensor(1), scalar_tensor(2)}, 0),
                        "cat: zero-dimensional tensor (at position 0) cannot be concatenated");
  EXPECT_ERROR_CONTAINS(cat({zeros({2}), Tensor()}, 0), "cat: tensor at position 1 is undefined");
  EXPECT_ERROR_CONTAINS(cat({zeros({2, 3})}, 2), "cat: dimension out of range");
}

TEST(Cat, GradientIsTheSliceOfEachInput) {
  Tensor a = zeros({2, 2}).requires_grad_(), b = zeros({2, 1}).requires_grad_();
  Tensor grad = arange(6, kFloat32).view({2, 3});  // [[0, 1, 2], [3, 4, 5]]
  cat({a, b}, 1).backward(grad);
  EXPECT_EQ(to_vector<float>(a.grad()), (std::vector<float>{0, 1, 3, 4}));
  EXPECT_EQ(to_vector<float>(b.grad()), (std::vector<float>{2, 5}));
}

TEST(CatGradcheck, AlongInnerDimensionWithATransposedInput) {
  auto fn = [](const std::vector<Tensor>& in) { return cat({in[0], in[1], in[2]}, 1); };
  Tensor transposed = leaf({3, 2}, 1.0).detach().t().requires_grad_();  // [2, 3]
  GradcheckResult result = gradcheck(fn, {leaf({2, 2}), transposed, leaf({2, 1}, 2.0)});
  EXPECT_TRUE(result.ok) << result.message;
}

// ---- stack ----

TEST(Stack, JoinsAlongANewDimension) {
  Tensor a = tensor({1, 2, 3}, kFloat32), b = tensor({4, 5, 6}, kFloat32);
  Tensor first = stack({a, b}, 0);
  EXPECT_EQ(first.sizes(), (Shape{2, 3}));
  EXPECT_EQ(to_vector<float>(first), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  Tensor last = stack({a, b}, -1);
  EXPECT_EQ(last.sizes(), (Shape{3, 2}));
  EXPECT_EQ(to_vector<float>(last), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  Tensor scalars = stack({scalar_tensor(1), scalar_tensor(2)}, 0);
  EXPECT_EQ(scalars.sizes(), (Shape{2}));
  EXPECT_EQ(to_vector<float>(scalars), (std::vector<float>{1, 2}));
}

TEST(Stack, BadInputsAreErrors) {
  EXPECT_ERROR_CONTAINS(stack({}, 0), "stack: expected a non-empty list of tensors");
  EXPECT_ERROR_CONTAINS(stack({zeros({2, 3}), zeros({2, 4})}, 0),
                        "stack: expected tensors of equal shape, got [2, 3] at position 0 and "
                        "[2, 4] at position 1");
  EXPECT_ERROR_CONTAINS(stack({zeros({2}), zeros({2})}, 2), "stack: dimension out of range");
}

TEST(StackGradcheck, MiddleDimension) {
  auto fn = [](const std::vector<Tensor>& in) { return stack({in[0], in[1]}, 1); };
  GradcheckResult result = gradcheck(fn, {leaf({2, 3}), leaf({2, 3}, 1.0)});
  EXPECT_TRUE(result.ok) << result.message;
}

// ---- index_select ----

TEST(IndexSelect, GathersRowsAndColumnsWithRepeats) {
  Tensor x = arange(12, kFloat32).view({3, 4});  // rows [0..3], [4..7], [8..11]
  Tensor rows = index_select(x, 0, indices({2, 0, 2}));
  EXPECT_EQ(rows.sizes(), (Shape{3, 4}));
  EXPECT_EQ(to_vector<float>(rows), (std::vector<float>{8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11}));
  Tensor columns = index_select(x, -1, indices({3, 1}));
  EXPECT_EQ(columns.sizes(), (Shape{3, 2}));
  EXPECT_EQ(to_vector<float>(columns), (std::vector<float>{3, 1, 7, 5, 11, 9}));
  EXPECT_EQ(index_select(x, 0, empty({0}, kInt64)).sizes(), (Shape{0, 4}));
}

TEST(IndexSelect, NonContiguousInputsAndOtherDtypes) {
  Tensor x = arange(12).view({3, 4}).t();  // int64 [4, 3]: [[0, 4, 8], [1, 5, 9], ...]
  Tensor out = index_select(x, 0, indices({3, 0}));
  EXPECT_EQ(out.dtype(), kInt64);
  EXPECT_EQ(to_vector<int64_t>(out), (std::vector<int64_t>{3, 7, 11, 0, 4, 8}));
  Tensor strided_index = indices({2, 9, 1, 9}).slice(0, 0, 4, 2);  // [2, 1]
  Tensor middle = index_select(arange(24, kFloat32).view({2, 3, 4}).to(kFloat16), 1, strided_index);
  EXPECT_EQ(middle.sizes(), (Shape{2, 2, 4}));
  EXPECT_EQ(to_vector<float>(middle),
            (std::vector<float>{8, 9, 10, 11, 4, 5, 6, 7, 20, 21, 22, 23, 16, 17, 18, 19}));
}

TEST(IndexSelect, BadInputsAreErrors) {
  Tensor x = zeros({5, 2});
  EXPECT_ERROR_CONTAINS(index_select(x, 0, indices({1, 7})),
                        "index_select: index 7 is out of range for dimension 0 of size 5 (at "
                        "position 1 of the index)");
  EXPECT_ERROR_CONTAINS(index_select(x, 0, indices({-1})),
                        "index_select: index -1 is out of range for dimension 0 of size 5");
  EXPECT_ERROR_CONTAINS(index_select(x, 0, tensor(std::vector<int32_t>{1})),
                        "index_select: expected a 1-D int64 index, got int32 of shape [1]");
  EXPECT_ERROR_CONTAINS(index_select(x, 0, indices({0, 1}).view({1, 2})),
                        "index_select: expected a 1-D int64 index, got int64 of shape [1, 2]");
  EXPECT_ERROR_CONTAINS(index_select(scalar_tensor(1), 0, indices({0})),
                        "index_select: expected an input with at least one dimension");
  EXPECT_ERROR_CONTAINS(index_select(x, 2, indices({0})), "index_select: dimension out of range");
}

TEST(IndexSelect, GradientScattersAndAddsRepeats) {
  Tensor x = zeros({3, 2}).requires_grad_();
  Tensor grad = arange(1, 7, 1, kFloat32).view({3, 2});  // [[1, 2], [3, 4], [5, 6]]
  index_select(x, 0, indices({2, 0, 2})).backward(grad);
  // Row 0 gets the second gradient row; row 2 the first and third, added; row 1 nothing.
  EXPECT_EQ(to_vector<float>(x.grad()), (std::vector<float>{3, 4, 0, 0, 6, 8}));
}

TEST(IndexSelectGradcheck, InnerDimensionWithRepeats) {
  auto fn = [](const std::vector<Tensor>& in) {
    return index_select(in[0], 1, indices({3, 0, 3, 1}));
  };
  GradcheckResult result = gradcheck(fn, {leaf({2, 4, 3})});
  EXPECT_TRUE(result.ok) << result.message;
  Tensor transposed = leaf({4, 2}).detach().t().requires_grad_();
  GradcheckResult on_transposed = gradcheck(
      [](const std::vector<Tensor>& in) {
        return index_select(in[0], 0, indices({1, 1}));
      },
      {transposed});
  EXPECT_TRUE(on_transposed.ok) << on_transposed.message;
}

// ---- one_hot ----

TEST(OneHot, EncodesLabelsWithGivenOrInferredClasses) {
  Tensor labels = indices({2, 0, 1});
  Tensor encoded = one_hot(labels, 4);
  EXPECT_EQ(encoded.dtype(), kInt64);
  EXPECT_EQ(encoded.sizes(), (Shape{3, 4}));
  EXPECT_EQ(to_vector<int64_t>(encoded),
            (std::vector<int64_t>{0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0}));
  Tensor inferred = one_hot(labels);
  EXPECT_EQ(inferred.sizes(), (Shape{3, 3}));
  EXPECT_EQ(to_vector<int64_t>(inferred), (std::vector<int64_t>{0, 0, 1, 1, 0, 0, 0, 1, 0}));
  Tensor grid = one_hot(indices({1, 0, 0, 1}).view({2, 2}).t(), 2);  // labels [[1, 0], [0, 1]]
  EXPECT_EQ(grid.sizes(), (Shape{2, 2, 2}));
  EXPECT_EQ(to_vector<int64_t>(grid), (std::vector<int64_t>{0, 1, 1, 0, 1, 0, 0, 1}));
  EXPECT_EQ(one_hot(empty({0}, kInt64), 3).sizes(), (Shape{0, 3}));
}

TEST(OneHot, BadInputsAreErrors) {
  EXPECT_ERROR_CONTAINS(one_hot(indices({0, 3}), 3),
                        "one_hot: label 3 is out of range for 3 classes (at position 1)");
  EXPECT_ERROR_CONTAINS(one_hot(indices({-1})), "one_hot: label -1 is out of range for 1 classes");
  EXPECT_ERROR_CONTAINS(one_hot(tensor({1.0}), 2), "one_hot: expected int64 labels, got float32");
  EXPECT_ERROR_CONTAINS(one_hot(indices({0}), 0),
                        "one_hot: num_classes must be positive, or -1 to take the largest label "
                        "+ 1, got 0");
  EXPECT_ERROR_CONTAINS(one_hot(empty({0}, kInt64)),
                        "one_hot: cannot take num_classes from empty labels");
}

}  // namespace
}  // namespace minidl
