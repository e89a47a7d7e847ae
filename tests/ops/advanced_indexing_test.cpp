// Indexing by one tensor, as LibTorch's: x.index({mask}), x.index({indices}), index_put and
// index_put_ (with and without accumulate): PyTorch 2.15's values and gradients
// (tests/ops/shape_ops_reference.h), f64 gradient checks, repeated indices, and the errors.
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
                        "index: the shape of the mask [4] does not match the shape of the indexed "
                        "tensor [3, 4] at dim 0");
  EXPECT_ERROR_CONTAINS(x.index({zeros({3, 4, 1}) > 0.0}),
                        "index: a mask of shape [3, 4, 1] has more dims than the tensor");
  EXPECT_ERROR_CONTAINS(x.index({zeros({2})}),
                        "index: expected a bool mask or an int64 index tensor, got float32");
  EXPECT_ERROR_CONTAINS(x.index({mask_rows(), 0}),
                        "index: a tensor index must be the only index, got {Tensor[3] bool, 0}");
  EXPECT_ERROR_CONTAINS(index_put(x, {mask_rows()}, zeros({3, 4})),
                        "index_put: values of shape [3, 4] cannot be broadcast to the indexing "
                        "result's shape [2, 4]");
  EXPECT_ERROR_CONTAINS(index_put(x, {mask_rows()}, zeros({4}, kFloat64)),
                        "index_put: expected values of the tensor's dtype float32");
  EXPECT_ERROR_CONTAINS(index_put(x, {0}, zeros({4})),
                        "index_put: expected exactly one index, a bool mask or an int64 index "
                        "tensor, got 1 indices (not a tensor)");
  EXPECT_ERROR_CONTAINS(x.index({from_host(std::vector<int64_t>{3}.data(), {1}, kInt64)}),
                        "index: index 3 at position 0 is out of range for dimension 0 of size 3");
}

}  // namespace
}  // namespace minidl
