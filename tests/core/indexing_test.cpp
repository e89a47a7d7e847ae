// Tensor::operator[] and Tensor::index with integers, slices, None and Ellipsis, as
// torch::indexing: values, views that share storage, negative and clamped slices, errors and
// their messages, and f64 gradient checks through the views.
#include "minidl/core/indexing.h"

#include <gtest/gtest.h>

#include <vector>

#include "minidl/core/autograd/gradcheck.h"
#include "minidl/core/tensor.h"
#include "minidl/ops/elementwise.h"
#include "test_util.h"

namespace minidl {
namespace {

using namespace indexing;
using testing::all_close;

// x[i, j, k] = 12 i + 4 j + k, shape [2, 3, 4].
Tensor numbered() { return arange(24, kFloat32).view({2, 3, 4}); }

std::vector<float> values_of(const Tensor& t) { return to_vector<float>(t); }

TEST(Indexing, BracketIsSelectAlongTheFirstDim) {
  Tensor x = numbered();
  EXPECT_EQ(x[1].sizes(), (Shape{3, 4}));
  EXPECT_EQ(values_of(x[1][2]), (std::vector<float>{20, 21, 22, 23}));
  EXPECT_EQ(values_of(x[-1][0]), (std::vector<float>{12, 13, 14, 15}));
  EXPECT_EQ(x[0][1][3].item<float>(), 7.0f);
  EXPECT_EQ(x[0][1][3].dim(), 0);
  EXPECT_EQ(values_of(x.transpose(0, 2)[3]), values_of(x.index({"...", 3}).t()));
  EXPECT_ERROR_CONTAINS(x[2], "select: index 2 is out of range for dimension 0 of size 2");
  EXPECT_ERROR_CONTAINS(x[-3], "select: index -3 is out of range for dimension 0 of size 2");
  EXPECT_ERROR_CONTAINS(scalar_tensor(1.0)[0], "operator[]: cannot index a 0-d tensor");
}

TEST(Indexing, IntegersAndSlices) {
  Tensor x = numbered();
  Tensor first_column = x.index({Slice(), 0});  // x[:, 0]
  EXPECT_EQ(first_column.sizes(), (Shape{2, 4}));
  EXPECT_EQ(values_of(first_column), (std::vector<float>{0, 1, 2, 3, 12, 13, 14, 15}));
  Tensor strided = x.index({1, Slice(1, None), Slice(None, None, 2)});  // x[1, 1:, ::2]
  EXPECT_EQ(strided.sizes(), (Shape{2, 2}));
  EXPECT_EQ(values_of(strided), (std::vector<float>{16, 18, 20, 22}));
  Tensor element = x.index({1, 2, 3});
  EXPECT_EQ(element.dim(), 0);
  EXPECT_EQ(element.item<float>(), 23.0f);
  Tensor middle = x.index({Slice(), Slice(1, 2), Slice(1, 3)});  // x[:, 1:2, 1:3]
  EXPECT_EQ(middle.sizes(), (Shape{2, 1, 2}));
  EXPECT_EQ(values_of(middle), (std::vector<float>{5, 6, 17, 18}));
  // Fewer indices than dims: the rest are whole.
  EXPECT_EQ(values_of(x.index({0, 1})), (std::vector<float>{4, 5, 6, 7}));
  // An empty list is the tensor itself.
  EXPECT_EQ(values_of(x.index({})), values_of(x));
  // size_t and int64_t variables work as integer indices.
  const size_t row = 1;
  const int64_t column = 2;
  EXPECT_EQ(x.index({0, row, column}).item<float>(), 6.0f);
}

TEST(Indexing, NegativeIndicesCountFromTheEnd) {
  Tensor x = numbered();
  EXPECT_EQ(values_of(x.index({-1})), values_of(x.index({1})));
  Tensor last_two_rows = x.index({Slice(), Slice(-2, None)});  // x[:, -2:]
  EXPECT_EQ(last_two_rows.sizes(), (Shape{2, 2, 4}));
  EXPECT_EQ(values_of(last_two_rows),
            (std::vector<float>{4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19, 20, 21, 22, 23}));
  Tensor all_but_last = x.index({Slice(), -1, Slice(None, -1)});  // x[:, -1, :-1]
  EXPECT_EQ(all_but_last.sizes(), (Shape{2, 3}));
  EXPECT_EQ(values_of(all_but_last), (std::vector<float>{8, 9, 10, 20, 21, 22}));
  EXPECT_EQ(x.index({-2, -3, -4}).item<float>(), 0.0f);
}

TEST(Indexing, OutOfRangeSlicesClampAsInPython) {
  Tensor x = numbered();
  EXPECT_EQ(x.index({Slice(5, 10)}).sizes(), (Shape{0, 3, 4}));
  EXPECT_EQ(values_of(x.index({Slice(-100, 100)})), values_of(x));
  EXPECT_EQ(x.index({Slice(), Slice(2, 1)}).sizes(), (Shape{2, 0, 4}));  // stop before start
  Tensor odd = x.index({0, 0, Slice(1, 100, 2)});                        // x[0, 0, 1:100:2]
  EXPECT_EQ(values_of(odd), (std::vector<float>{1, 3}));
  Tensor tail = x.index({0, 0, Slice(-100, -2)});  // x[0, 0, -100:-2]
  EXPECT_EQ(values_of(tail), (std::vector<float>{0, 1}));
  EXPECT_EQ(x.index({0, 0, Slice(None, None, 10)}).item<float>(), 0.0f);
}

TEST(Indexing, EllipsisAndNone) {
  Tensor x = numbered();
  Tensor last_dim_first = x.index({"...", 0});  // x[..., 0]
  EXPECT_EQ(last_dim_first.sizes(), (Shape{2, 3}));
  EXPECT_EQ(values_of(last_dim_first), (std::vector<float>{0, 4, 8, 12, 16, 20}));
  EXPECT_EQ(values_of(x.index({Ellipsis, 0})), values_of(last_dim_first));
  EXPECT_EQ(x.index({0, "..."}).sizes(), (Shape{3, 4}));
  EXPECT_EQ(values_of(x.index({0, Ellipsis, 1})), (std::vector<float>{1, 5, 9}));
  EXPECT_EQ(x.index({"...", 1, 2, 3}).item<float>(), 23.0f);  // "..." may stand for no dim
  EXPECT_EQ(x.index({"..."}).sizes(), (Shape{2, 3, 4}));

  EXPECT_EQ(x.index({None}).sizes(), (Shape{1, 2, 3, 4}));
  EXPECT_EQ(x.index({"...", None}).sizes(), (Shape{2, 3, 4, 1}));
  Tensor inserted = x.index({Slice(), None, 0});  // x[:, None, 0]
  EXPECT_EQ(inserted.sizes(), (Shape{2, 1, 4}));
  EXPECT_EQ(values_of(inserted), (std::vector<float>{0, 1, 2, 3, 12, 13, 14, 15}));
  EXPECT_EQ(x.index({None, 1, None, Slice(), 3}).sizes(), (Shape{1, 1, 3}));
  EXPECT_EQ(values_of(x.index({None, 1, None, Slice(), 3})), (std::vector<float>{15, 19, 23}));

  Tensor scalar = scalar_tensor(5.0);
  EXPECT_EQ(scalar.index({None}).sizes(), (Shape{1}));
  EXPECT_EQ(scalar.index({None}).item<float>(), 5.0f);
  EXPECT_EQ(scalar.index({"..."}).dim(), 0);
}

TEST(Indexing, ResultsAreViewsThatShareStorage) {
  Tensor x = numbered();
  Tensor column = x.index({Slice(), 1, Slice(None, None, 2)});  // x[:, 1, ::2]
  EXPECT_EQ(column.storage().get(), x.storage().get());
  EXPECT_EQ(column.storage_offset(), 4);
  EXPECT_EQ(column.strides(), (Shape{12, 2}));
  column.fill_(-1);  // writes through to x[:, 1, 0] and x[:, 1, 2]
  EXPECT_EQ(values_of(x.index({Slice(), 1})), (std::vector<float>{-1, 5, -1, 7, -1, 17, -1, 19}));
  Tensor row = x[0];
  row.index({2, Slice(1, 3)}).fill_(100);  // x[0, 2, 1:3]
  EXPECT_EQ(values_of(x[0][2]), (std::vector<float>{8, 100, 100, 11}));
  EXPECT_EQ(x.index({None}).storage().get(), x.storage().get());
}

TEST(Indexing, OutOfRangeIntegerIsAnErrorNamingTheDimIndexAndSize) {
  Tensor x = numbered();
  EXPECT_ERROR_CONTAINS(x.index({2}), "index: index 2 is out of range for dimension 0 with size 2");
  EXPECT_ERROR_CONTAINS(x.index({0, -4}),
                        "index: index -4 is out of range for dimension 1 with size 3 (tensor of "
                        "shape [2, 3, 4], indices {0, -4})");
  // The dim is counted in the indexed tensor, not in the result that None changed.
  EXPECT_ERROR_CONTAINS(x.index({None, "...", 4}),
                        "index: index 4 is out of range for dimension 2 with size 4");
  EXPECT_ERROR_CONTAINS(x.index({Slice(1, None, 2), None, 0, 4}),
                        "index 4 is out of range for dimension 2 with size 4");
}

TEST(Indexing, MalformedIndexListsAreErrors) {
  Tensor x = numbered();
  EXPECT_ERROR_CONTAINS(x.index({0, 0, 0, 0}),
                        "index: too many indices for a tensor of dimension 3 (shape [2, 3, 4]): "
                        "{0, 0, 0, 0}");
  EXPECT_ERROR_CONTAINS(scalar_tensor(1.0).index({0}),
                        "index: too many indices for a tensor of dimension 0");
  EXPECT_ERROR_CONTAINS(x.index({"...", 0, Ellipsis}),
                        "index: an index can only have a single ellipsis ('...'), got "
                        "{..., 0, ...}");
  EXPECT_ERROR_CONTAINS(x.index({".."}),
                        "TensorIndex: expected \"...\" to represent an ellipsis "
                        "index, but got \"..\"");
  EXPECT_ERROR_CONTAINS(Slice(0, 2, 0), "Slice: step must be greater than zero, got 0");
  EXPECT_ERROR_CONTAINS(x.index({Slice(None, None, -1)}),
                        "Slice: step must be greater than zero, got -1 (PyTorch's tensor indexing "
                        "has no negative steps either; reverse a dim with x.flip({dim}), then "
                        "slice it with a positive step)");
}

TEST(Indexing, PrintsIndicesAsPython) {
  EXPECT_EQ(to_string(TensorIndex(Slice(1, None, 2))), "1:None:2");
  EXPECT_EQ(to_string(TensorIndex(Slice())), "0:None:1");
  EXPECT_EQ(to_string(TensorIndex(-3)), "-3");
  EXPECT_EQ(to_string(TensorIndex(None)), "None");
  EXPECT_EQ(to_string(TensorIndex("...")), "...");
  EXPECT_TRUE(TensorIndex(0).is_integer());  // a literal 0 is an integer, not a null string
}

TEST(Indexing, GradientFlowsBackToTheIndexedElements) {
  Tensor x = numbered().to(kFloat64).requires_grad_();
  Tensor picked = x.index({Slice(), 1, Slice(1, None, 2)});  // x[:, 1, 1::2]
  ASSERT_TRUE(picked.requires_grad());
  (picked * 2).sum().backward();
  std::vector<double> expected(24, 0.0);
  for (int64_t i : {0, 1})
    for (int64_t k : {1, 3}) expected[12 * i + 4 * 1 + k] = 2.0;
  EXPECT_EQ(to_vector<double>(x.grad()), expected);
}

TEST(IndexingGradcheck, IntegersSlicesNoneEllipsisAndBracket) {
  Tensor x = testing::wiggly({3, 4, 5}, 0.0, kFloat64).requires_grad_();
  const std::vector<std::vector<TensorIndex>> cases = {
      {Slice(), 0},
      {Slice(1, None), None, -1, Slice(None, None, 2)},
      {"...", 2},
      {-1, Slice(-3, 100), Ellipsis},
      {None, Slice(None, None, 2), 1, Slice(1, 4)},
  };
  for (const std::vector<TensorIndex>& indices : cases) {
    auto result =
        gradcheck([&](const std::vector<Tensor>& in) { return in[0].index(indices).pow(2); }, {x});
    EXPECT_TRUE(result) << result.message;
  }
  auto bracket = gradcheck(
      [](const std::vector<Tensor>& in) { return in[0][2][-1] + in[0].transpose(0, 1)[1][0]; },
      {x});
  EXPECT_TRUE(bracket) << bracket.message;
}

}  // namespace
}  // namespace minidl
