// Indexing by tensors, as LibTorch's: x.index({mask}), x.index({indices}), tensors among
// integers, slices, None and "..." (x.index({Slice(), indices})), several tensors broadcast
// together, index_put and index_put_ (with and without accumulate): PyTorch 2.15's values and
// gradients (tests/ops/shape_ops_reference.h), f64 gradient checks, repeated indices, and the
// errors.
#include <gtest/gtest.h>

#include <vector>

#include "minidl/core/autograd/gradcheck.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/indexing.h"
#include "reference_entry.h"
#include "shape_ops_reference.h"
#include "test_util.h"

namespace minidl {
namespace {

using indexing::None;
using indexing::Slice;
using testing::ReferenceFn;

// The masks and indices of tools/reference/make_shape_ops_reference.py.
Tensor mask_2d() {
  const std::vector<uint8_t> mask = {1, 0, 1, 1, 0, 0, 0, 0, 0, 1, 1, 0};
  return from_host(mask.data(), {3, 4}, kBool);
}
Tensor mask_rows() {
  const std::vector<uint8_t> mask = {1, 0, 1};
  return from_host(mask.data(), {3}, kBool);
}
Tensor int_index() {
  const std::vector<int64_t> index = {2, 0, -1, 2};
  return from_host(index.data(), {2, 2}, kInt64);
}
Tensor accumulate_index() {
  const std::vector<int64_t> index = {0, 2, 0};
  return from_host(index.data(), {3}, kInt64);
}
Tensor int64s(std::vector<int64_t> values, const Shape& shape) {
  return from_host(values.data(), shape, kInt64);
}
// The script's COLUMNS, ROW_PICKS, DEPTH_PICKS, TARGETS and MASK_3X4.
Tensor columns() { return int64s({3, 0, -2, 1}, {2, 2}); }
Tensor row_picks() { return int64s({2, 0, 1}, {3}); }
Tensor depth_picks() { return int64s({4, -5, 3}, {3}); }
Tensor targets() { return int64s({5, 0, 3, 3}, {4}); }
Tensor mask_3x4() {
  const std::vector<uint8_t> mask = {1, 0, 0, 1, 0, 1, 1, 0, 1, 0, 0, 0};
  return from_host(mask.data(), {3, 4}, kBool);
}

struct IndexCase {
  const char* name;
  ReferenceFn fn;
  std::vector<Shape> shapes;
  const testing::ReferenceEntry& output;
  std::vector<testing::ReferenceEntry> grads;
};

std::vector<IndexCase> index_cases() {
  using namespace testing;
  return {
      {"IndexMask",
       [](const std::vector<Tensor>& in) { return in[0].index({mask_2d()}); },
       {{3, 4}},
       kIndexMaskOutput,
       {kIndexMaskGrad0}},
      {"IndexMaskRows",
       [](const std::vector<Tensor>& in) { return in[0].index({mask_rows()}); },
       {{3, 4}},
       kIndexMaskRowsOutput,
       {kIndexMaskRowsGrad0}},
      {"IndexInt",
       [](const std::vector<Tensor>& in) { return in[0].index({int_index()}); },
       {{3, 4}},
       kIndexIntOutput,
       {kIndexIntGrad0}},
      {"IndexPutMaskRowValues",
       [](const std::vector<Tensor>& in) { return index_put(in[0], {mask_rows()}, in[1]); },
       {{3, 4}, {4}},
       kIndexPutMaskRowValuesOutput,
       {kIndexPutMaskRowValuesGrad0, kIndexPutMaskRowValuesGrad1}},
      {"IndexPutMaskValues",
       [](const std::vector<Tensor>& in) { return index_put(in[0], {mask_2d()}, in[1]); },
       {{3, 4}, {5}},
       kIndexPutMaskValuesOutput,
       {kIndexPutMaskValuesGrad0, kIndexPutMaskValuesGrad1}},
      {"IndexPutMaskAccumulate",
       [](const std::vector<Tensor>& in) { return index_put(in[0], {mask_2d()}, in[1], true); },
       {{3, 4}, {5}},
       kIndexPutMaskAccumulateOutput,
       {kIndexPutMaskAccumulateGrad0, kIndexPutMaskAccumulateGrad1}},
      {"IndexPutIntAccumulate",
       [](const std::vector<Tensor>& in) {
         return index_put(in[0], {accumulate_index()}, in[1], true);
       },
       {{3, 4}, {3, 4}},
       kIndexPutIntAccumulateOutput,
       {kIndexPutIntAccumulateGrad0, kIndexPutIntAccumulateGrad1}},
      {"IndexPutInt",
       [](const std::vector<Tensor>& in) { return index_put(in[0], {int_index()}, in[1]); },
       {{3, 4}, {2, 2, 4}},
       kIndexPutIntOutput,
       {kIndexPutIntGrad0, kIndexPutIntGrad1}},
      // Tensors among other indices (Note [Tensor indices among others]).
      {"IndexSliceTensor",
       [](const std::vector<Tensor>& in) {
         return in[0].index({Slice(), columns()});
       },
       {{3, 4, 5}},
       kIndexSliceTensorOutput,
       {kIndexSliceTensorGrad0}},
      {"IndexTensorSliceTensor",
       [](const std::vector<Tensor>& in) {
         return in[0].index({row_picks(), Slice(), depth_picks()});
       },
       {{3, 4, 5}},
       kIndexTensorSliceTensorOutput,
       {kIndexTensorSliceTensorGrad0}},
      {"IndexIntSliceTensor",
       [](const std::vector<Tensor>& in) {
         return in[0].index({1, Slice(), depth_picks()});
       },
       {{3, 4, 5}},
       kIndexIntSliceTensorOutput,
       {kIndexIntSliceTensorGrad0}},
      {"IndexRowsAndTargets",
       [](const std::vector<Tensor>& in) {
         return in[0].index({arange(4), targets()});
       },
       {{4, 6}},
       kIndexRowsAndTargetsOutput,
       {kIndexRowsAndTargetsGrad0}},
      {"IndexBroadcastTensors",
       [](const std::vector<Tensor>& in) {
         return in[0].index({row_picks().view({3, 1}), columns()[0].view({1, 2})});
       },
       {{3, 4, 5}},
       kIndexBroadcastTensorsOutput,
       {kIndexBroadcastTensorsGrad0}},
      {"IndexTensorNoneTensor",
       [](const std::vector<Tensor>& in) {
         return in[0].index({row_picks(), None, row_picks() + 1});
       },
       {{3, 4, 5}},
       kIndexTensorNoneTensorOutput,
       {kIndexTensorNoneTensorGrad0}},
      {"IndexSliceMask",
       [](const std::vector<Tensor>& in) {
         return in[0].index({Slice(), mask_3x4()});
       },
       {{2, 3, 4}},
       kIndexSliceMaskOutput,
       {kIndexSliceMaskGrad0}},
      {"IndexEllipsisTensor",
       [](const std::vector<Tensor>& in) {
         return in[0].index({"...", columns()});
       },
       {{2, 3, 4}},
       kIndexEllipsisTensorOutput,
       {kIndexEllipsisTensorGrad0}},
      {"IndexPutSliceTensor",
       [](const std::vector<Tensor>& in) {
         return index_put(in[0], {Slice(), columns()}, in[1]);
       },
       {{3, 4, 5}, {2, 2, 5}},
       kIndexPutSliceTensorOutput,
       {kIndexPutSliceTensorGrad0, kIndexPutSliceTensorGrad1}},
      {"IndexPutIntSliceTensor",
       [](const std::vector<Tensor>& in) {
         return index_put(in[0], {1, Slice(), depth_picks()}, in[1]);
       },
       {{3, 4, 5}, {3}},
       kIndexPutIntSliceTensorOutput,
       {kIndexPutIntSliceTensorGrad0, kIndexPutIntSliceTensorGrad1}},
      {"IndexPutTensorsAccumulate",
       [](const std::vector<Tensor>& in) {
         return index_put(in[0], {int64s({0, 2, 0, 1}, {4}), int64s({1, 3, 1, 1}, {4})}, in[1],
                          true);
       },
       {{3, 4}, {4}},
       kIndexPutTensorsAccumulateOutput,
       {kIndexPutTensorsAccumulateGrad0, kIndexPutTensorsAccumulateGrad1}},
  };
}

TEST(AdvancedIndexing, MatchesPyTorchValuesAndGradients) {
  for (const IndexCase& c : index_cases())
    EXPECT_TRUE(testing::matches_reference(c.fn, c.shapes, c.output, c.grads)) << c.name;
}

TEST(AdvancedIndexing, PassesGradcheck) {
  for (const IndexCase& c : index_cases()) {
    if (std::string(c.name) == "IndexPutInt") continue;  // index 2 twice: not differentiable
    std::vector<Tensor> inputs;
    for (size_t k = 0; k < c.shapes.size(); ++k)
      inputs.push_back(
          testing::wiggly(c.shapes[k], 0.5 + static_cast<double>(k), kFloat64).requires_grad_());
    auto result = gradcheck(c.fn, inputs);
    EXPECT_TRUE(result) << c.name << ": " << result.message;
  }
}

TEST(AdvancedIndexing, IndexPutInPlaceAsLibTorch) {
  Tensor x = arange(0, 12, 1, kFloat32).view({3, 4});
  x.index_put_({x > 8.0}, -1.0);
  EXPECT_EQ(to_vector<float>(x), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, -1, -1, -1}));
  // Repeated indices with accumulate add up, in position order.
  Tensor counts = zeros({4});
  counts.index_put_({from_host(std::vector<int64_t>{1, 3, 1, 1}.data(), {4}, kInt64)}, ones({4}),
                    /*accumulate=*/true);
  EXPECT_EQ(to_vector<float>(counts), (std::vector<float>{0, 3, 0, 1}));
  // Without accumulate the last value written wins (deterministic here; PyTorch's is undefined).
  Tensor last = zeros({3});
  last.index_put_({from_host(std::vector<int64_t>{2, 2}.data(), {2}, kInt64)}, tensor({5.0, 7.0}));
  EXPECT_EQ(to_vector<float>(last), (std::vector<float>{0, 0, 7}));
  // Among slices, as x[:, [0, 0, 2]] = [1, 2, 3] in PyTorch (the last write to column 0 wins).
  Tensor grid = zeros({3, 4});
  grid.index_put_({Slice(), int64s({0, 0, 2}, {3})}, tensor({1.0f, 2.0f, 3.0f}));
  EXPECT_EQ(to_vector<float>(grid), (std::vector<float>{2, 0, 3, 0, 2, 0, 3, 0, 2, 0, 3, 0}));
  // Two tensors: one element each, accumulated.
  Tensor pairs = zeros({3, 4});
  pairs.index_put_({int64s({0, 1}, {2}), int64s({1, 1}, {2})}, 5.0);
  EXPECT_EQ(to_vector<float>(pairs), (std::vector<float>{0, 5, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0}));
  // A 0-d mask selects the whole tensor as one row, or none.
  EXPECT_EQ(x.index({full({}, 1.0, kBool)}).sizes(), (Shape{1, 3, 4}));
  EXPECT_EQ(x.index({full({}, 0.0, kBool)}).sizes(), (Shape{0, 3, 4}));
  // The leaf that requires grad cannot be written in place.
  Tensor leaf = zeros({3}).requires_grad_();
  EXPECT_ERROR_CONTAINS(leaf.index_put_({tensor({1.0, 0.0, 1.0}) > 0.5}, 1.0), "index_put_");
}

TEST(AdvancedIndexing, BadIndicesAreErrors) {
  const Tensor x = zeros({3, 4});
  EXPECT_ERROR_CONTAINS(x.index({zeros({4}) > 0.0}),
                        "index: the shape of the mask [4] does not match the shape [3] of the dims "
                        "it indexes (tensor of shape [3, 4] from dim 0)");
  EXPECT_ERROR_CONTAINS(x.index({zeros({3, 4, 1}) > 0.0}),
                        "index: too many indices for a tensor of dimension 2");
  EXPECT_ERROR_CONTAINS(x.index({zeros({2})}),
                        "index: expected a bool mask or an int64 index tensor, got float32");
  EXPECT_ERROR_CONTAINS(x.index({Slice(), mask_rows()}),
                        "index: the shape of the mask [3] does not match the shape [4] of the dims "
                        "it indexes (tensor of shape [3, 4] from dim 1)");
  EXPECT_ERROR_CONTAINS(x.index({int64s({0, 1}, {2}), int64s({0, 1, 2}, {3})}),
                        "index: shapes [2] and [3] cannot be broadcast");
  EXPECT_ERROR_CONTAINS(x.index({Slice(), int64s({1, 4}, {2})}),
                        "index: index 4 at position 1 is out of range for dimension 1 of size 4");
  EXPECT_ERROR_CONTAINS(x.index({0, 0, int64s({0}, {1})}), "index: too many indices");
  EXPECT_ERROR_CONTAINS(index_put(x, {mask_rows()}, zeros({3, 4})),
                        "index_put: values of shape [3, 4] cannot be broadcast to the indexing "
                        "result's shape [2, 4]");
  EXPECT_ERROR_CONTAINS(index_put(x, {mask_rows()}, zeros({4}, kFloat64)),
                        "index_put: expected values of the tensor's dtype float32");
  EXPECT_ERROR_CONTAINS(index_put(x, {0}, zeros({4})),
                        "index_put: expected at least one tensor index (a bool mask or an int64 "
                        "index), got {0}");
  EXPECT_ERROR_CONTAINS(index_put(x, {Slice(), int64s({0, 1}, {2})}, zeros({3})),
                        "index_put: values of shape [3] cannot be broadcast to the indexing "
                        "result's shape [3, 2]");
  EXPECT_ERROR_CONTAINS(x.index({from_host(std::vector<int64_t>{3}.data(), {1}, kInt64)}),
                        "index: index 3 at position 0 is out of range for dimension 0 of size 3");
}

}  // namespace
}  // namespace minidl
