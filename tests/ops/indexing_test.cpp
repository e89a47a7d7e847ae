// gather, scatter, scatter_add, index_add, masked_select and the in-place scatter_,
// scatter_add_ and masked_fill_ on the CPU: values and gradients against PyTorch's
// (tests/ops/indexing_reference.h), f64 gradient checks, repeated indices (in order, and in
// float32 for the 16-bit dtypes), dtypes, and every error.
#include "minidl/ops/indexing.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "indexing_reference.h"
#include "minidl/core/autograd/gradcheck.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/masking.h"
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

Tensor index_tensor(const std::vector<int64_t>& values, const Shape& sizes) {
  return tensor(values, sizes);
}

// The indices of the reference script.
const Tensor& gather_index_dim0() {
  static const Tensor index = index_tensor({2, 0, 1, 2, 0, 0, 2, 1}, {2, 4});
  return index;
}
const Tensor& gather_index_dim1() {
  static const Tensor index = index_tensor({0, 2, 2, 1, 0, 3}, {2, 3});
  return index;
}
const Tensor& scatter_add_index() {
  static const Tensor index = index_tensor({0, 1, 2, 0, 2, 2, 0, 0}, {2, 4});
  return index;
}
const Tensor& scatter_index() {
  static const Tensor index = index_tensor({0, 1, 2, 0, 2, 0, 1, 1}, {2, 4});
  return index;
}
const Tensor& index_add_index() {
  static const Tensor index = index_tensor({2, 0, 2}, {3});
  return index;
}
constexpr double kIndexAddAlpha = 2.5;
Tensor row_mask() { return tensor(std::vector<int64_t>{1, 0, 1, 1}, {1, 4}).to(kBool); }

double tolerance_of(DType dtype) { return dtype == kFloat64 ? 1e-12 : 1e-5; }

TEST(Indexing, GatherMatchesPyTorch) {
  for (DType dtype : {kFloat64, kFloat32}) {
    SCOPED_TRACE(dtype_name(dtype));
    const double tolerance = tolerance_of(dtype);
    for (int64_t dim : {0, 1}) {
      const Tensor& index = dim == 0 ? gather_index_dim0() : gather_index_dim1();
      Tensor x = wiggly({3, 4}, 0.0, dtype).requires_grad_();
      Tensor out = dim == 0 ? gather(x, 0, index) : x.gather(-1, index);
      EXPECT_EQ(out.sizes(), index.sizes());
      EXPECT_TRUE(all_close(out,
                            dim == 0 ? reference(testing::kGatherDim0Output, {2, 4})
                                     : reference(testing::kGatherDim1Output, {2, 3}),
                            tolerance, tolerance));
      out.backward(wiggly(index.sizes(), 1.0, dtype));
      EXPECT_TRUE(all_close(x.grad(),
                            dim == 0 ? reference(testing::kGatherDim0Grad, {3, 4})
                                     : reference(testing::kGatherDim1Grad, {3, 4}),
                            tolerance, tolerance));
    }
  }
}

TEST(Indexing, ScatterAndScatterAddMatchPyTorch) {
  for (DType dtype : {kFloat64, kFloat32}) {
    SCOPED_TRACE(dtype_name(dtype));
    const double tolerance = tolerance_of(dtype);
    for (bool add : {true, false}) {
      Tensor x = wiggly({3, 4}, 0.0, dtype).requires_grad_();
      Tensor src = wiggly({2, 4}, 2.0, dtype).requires_grad_();
      Tensor out =
          add ? scatter_add(x, 0, scatter_add_index(), src) : x.scatter(0, scatter_index(), src);
      EXPECT_TRUE(all_close(out,
                            add ? reference(testing::kScatterAddOutput, {3, 4})
                                : reference(testing::kScatterOutput, {3, 4}),
                            tolerance, tolerance));
      out.backward(wiggly({3, 4}, 1.0, dtype));
      EXPECT_TRUE(all_close(x.grad(),
                            add ? reference(testing::kScatterAddGradInput, {3, 4})
                                : reference(testing::kScatterGradInput, {3, 4}),
                            tolerance, tolerance));
      EXPECT_TRUE(all_close(src.grad(),
                            add ? reference(testing::kScatterAddGradSrc, {2, 4})
                                : reference(testing::kScatterGradSrc, {2, 4}),
                            tolerance, tolerance));
    }
  }
}

TEST(Indexing, IndexAddMatchesPyTorch) {
  for (DType dtype : {kFloat64, kFloat32}) {
    SCOPED_TRACE(dtype_name(dtype));
    const double tolerance = tolerance_of(dtype);
    Tensor x = wiggly({4, 3}, 0.0, dtype).requires_grad_();
    Tensor source = wiggly({3, 3}, 2.0, dtype).requires_grad_();
    Tensor out = index_add(x, 0, index_add_index(), source, kIndexAddAlpha);
    EXPECT_TRUE(all_close(out, reference(testing::kIndexAddOutput, {4, 3}), tolerance, tolerance));
    out.backward(wiggly({4, 3}, 1.0, dtype));
    EXPECT_TRUE(
        all_close(x.grad(), reference(testing::kIndexAddGradInput, {4, 3}), tolerance, tolerance));
    EXPECT_TRUE(all_close(source.grad(), reference(testing::kIndexAddGradSrc, {3, 3}), tolerance,
                          tolerance));
    // An int32 index and the method form give the same.
    EXPECT_TRUE(all_close(
        x.detach().index_add(0, index_add_index().to(kInt32), source.detach(), kIndexAddAlpha), out,
        0.0, 0.0));
  }
}

TEST(Indexing, MaskedSelectMatchesPyTorch) {
  for (DType dtype : {kFloat64, kFloat32}) {
    SCOPED_TRACE(dtype_name(dtype));
    const double tolerance = tolerance_of(dtype);
    Tensor x = wiggly({3, 4}, 0.0, dtype).requires_grad_();
    Tensor out = masked_select(x, row_mask());
    EXPECT_EQ(out.sizes(), (Shape{9}));
    EXPECT_TRUE(all_close(out, reference(testing::kMaskedSelectOutput, {9}), tolerance, tolerance));
    out.backward(wiggly({9}, 1.0, dtype));
    EXPECT_TRUE(
        all_close(x.grad(), reference(testing::kMaskedSelectGrad, {3, 4}), tolerance, tolerance));
  }
}

TEST(IndexingGradcheck, GatherScatterAndIndexAdd) {
  Tensor x = wiggly({3, 4, 2}, 0.0, kFloat64).requires_grad_();
  Tensor index = index_tensor({2, 0, 1, 1, 0, 0, 2, 2, 1, 0, 1, 2}, {2, 3, 2});
  Tensor src = wiggly({2, 4, 2}, 2.0, kFloat64).requires_grad_();  // larger than the index
  auto gathered =
      gradcheck([&](const std::vector<Tensor>& in) { return gather(in[0], 0, index); }, {x});
  EXPECT_TRUE(gathered) << gathered.message;
  auto added = gradcheck(
      [&](const std::vector<Tensor>& in) { return scatter_add(in[0], 0, index, in[1]); }, {x, src});
  EXPECT_TRUE(added) << added.message;
  Tensor distinct = index_tensor({0, 1, 2, 0, 1, 2, 2, 0, 1, 2, 0, 1}, {2, 3, 2});
  auto assigned = gradcheck(
      [&](const std::vector<Tensor>& in) { return scatter(in[0], 0, distinct, in[1]); }, {x, src});
  EXPECT_TRUE(assigned) << assigned.message;
  Tensor source = wiggly({3, 5, 2}, 3.0, kFloat64).requires_grad_();
  Tensor rows = index_tensor({3, 0, 3, 1, 3}, {5});
  auto index_added = gradcheck(
      [&](const std::vector<Tensor>& in) { return index_add(in[0], 1, rows, in[1], -1.5); },
      {x, source});
  EXPECT_TRUE(index_added) << index_added.message;
  Tensor mask = wiggly({4, 1}, 0.0, kFloat64) > 0.0;
  auto selected = gradcheck(
      [&](const std::vector<Tensor>& in) { return masked_select(in[0], mask.unsqueeze(0)); }, {x});
  EXPECT_TRUE(selected) << selected.message;
}

TEST(Indexing, RepeatedIndicesAddInPositionOrderAndFloat32) {
  // 256 in bfloat16 has neighbours 2 apart: adding 1.0 one at a time in bfloat16 would leave
  // 256; the float32 sum of 16 ones is 272, which bfloat16 holds exactly.
  Tensor x = full({2}, 256.0, kBFloat16);
  Tensor index = zeros({16}, kInt64);
  Tensor out = scatter_add(x, 0, index, ones({16}, kBFloat16));
  EXPECT_EQ(to_vector<float>(out), (std::vector<float>{272.0f, 256.0f}));
  EXPECT_EQ(to_vector<float>(index_add(x, 0, index, ones({16}, kBFloat16))),
            (std::vector<float>{272.0f, 256.0f}));
  // float32: 1e8 + 1 + ... in position order is not the sum in another order.
  Tensor big = tensor({1e8, 0.0}, kFloat32);
  Tensor terms = tensor({4.0, 4.0, -1e8, 3.0}, kFloat32);
  Tensor to_first = zeros({4}, kInt64);
  float expected = 1e8f;
  for (float term : {4.0f, 4.0f, -1e8f, 3.0f}) expected += term;
  EXPECT_EQ(scatter_add(big, 0, to_first, terms)[0].item<float>(), expected);
}

TEST(Indexing, ScatterKeepsTheLastWrite) {
  Tensor x = zeros({3});
  Tensor index = index_tensor({1, 1, 2, 1}, {4});
  Tensor out = scatter(x, 0, index, tensor({10.0, 20.0, 30.0, 40.0}, kFloat32));
  EXPECT_EQ(to_vector<float>(out), (std::vector<float>{0.0f, 40.0f, 30.0f}));
}

TEST(Indexing, EveryDtypeGathersAndIntegersAdd) {
  for (DType dtype : {kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor x = tensor({0.0, 1.0, 1.0, 0.0, 1.0, 1.0}, kFloat32).reshape({2, 3}).to(dtype);
    Tensor index = index_tensor({2, 0, 1, 0}, {2, 2});
    EXPECT_EQ(to_vector<double>(gather(x, 1, index)), (std::vector<double>{1, 0, 1, 0}));
    Tensor written = scatter(x, 1, index, zeros({2, 2}, dtype));
    EXPECT_EQ(to_vector<double>(written), (std::vector<double>{0, 1, 0, 0, 0, 1}));
  }
  Tensor counts =
      scatter_add(zeros({3}, kInt64), 0, index_tensor({2, 0, 2, 2}, {4}), ones({4}, kInt64));
  EXPECT_EQ(to_vector<int64_t>(counts), (std::vector<int64_t>{1, 0, 3}));
}

TEST(Indexing, InPlaceForms) {
  Tensor x = zeros({2, 3});
  Tensor index = index_tensor({2, 0}, {2, 1});
  Tensor src = tensor({5.0, 7.0}, kFloat32).reshape({2, 1});
  Tensor& same = x.scatter_(1, index, src);
  EXPECT_EQ(&same, &x);
  EXPECT_EQ(to_vector<float>(x), (std::vector<float>{0, 0, 5, 7, 0, 0}));
  x.scatter_add_(1, index, src);
  EXPECT_EQ(to_vector<float>(x), (std::vector<float>{0, 0, 10, 14, 0, 0}));
  const uint64_t version = x.version();
  x.masked_fill_(tensor(std::vector<int64_t>{1, 0, 1}).to(kBool), -1.0);  // broadcast rows
  EXPECT_EQ(to_vector<float>(x), (std::vector<float>{-1, 0, -1, -1, 0, -1}));
  EXPECT_GT(x.version(), version);
  Tensor leaf = zeros({3}).requires_grad_();
  EXPECT_ERROR_CONTAINS(leaf.masked_fill_(ones({3}, kBool), 1.0), "masked_fill_");
  EXPECT_ERROR_CONTAINS(leaf.scatter_(0, index_tensor({0}, {1}), ones({1})), "scatter_");
  EXPECT_ERROR_CONTAINS(leaf.scatter_add_(0, index_tensor({0}, {1}), ones({1})), "scatter_add_");
  Tensor y = zeros({3});
  EXPECT_ERROR_CONTAINS(y.masked_fill_(ones({2, 3}, kBool), 1.0),
                        "masked_fill_: expected a mask that broadcasts to the tensor's shape");
}

TEST(Indexing, EmptyAndZeroDimensional) {
  Tensor x = wiggly({2, 3});
  EXPECT_EQ(gather(x, 1, zeros({2, 0}, kInt64)).sizes(), (Shape{2, 0}));
  EXPECT_TRUE(all_close(scatter_add(x, 0, zeros({0, 3}, kInt64), zeros({0, 3})), x, 0.0, 0.0));
  EXPECT_EQ(masked_select(x, zeros({2, 3}, kBool)).sizes(), (Shape{0}));
  Tensor scalar = scalar_tensor(4.0);
  EXPECT_EQ(gather(scalar, 0, scalar_tensor(0, kInt64)).item<float>(), 4.0f);
  EXPECT_EQ(scatter(scalar, 0, scalar_tensor(0, kInt64), scalar_tensor(9.0)).item<float>(), 9.0f);
  EXPECT_EQ(masked_select(scalar, scalar_tensor(1, kBool)).sizes(), (Shape{1}));
}

TEST(Indexing, IndexErrorsNameTheOpTheIndexAndTheSize) {
  Tensor x = zeros({3, 4});
  EXPECT_ERROR_CONTAINS(gather(x, 0, index_tensor({0, 5}, {1, 2})),
                        "gather: index 5 at position 1 of the index is out of range for a "
                        "dimension of size 3");
  EXPECT_ERROR_CONTAINS(scatter(x, 1, index_tensor({-1}, {1, 1}), ones({1, 1})),
                        "scatter: index -1 at position 0 of the index is out of range for a "
                        "dimension of size 4");
  EXPECT_ERROR_CONTAINS(scatter_add(x, 1, index_tensor({0, 4}, {1, 2}), ones({1, 2})),
                        "scatter_add: index 4 at position 1");
  EXPECT_ERROR_CONTAINS(index_add(x, 0, index_tensor({3}, {1}), ones({1, 4})),
                        "index_add: index 3 is out of range for a dimension of size 3");
  EXPECT_ERROR_CONTAINS(gather(x, 0, index_tensor({0}, {1, 1}).to(kInt32)),
                        "gather: expected an int64 index, got int32");
  EXPECT_ERROR_CONTAINS(gather(x, 0, index_tensor({0}, {1})),
                        "gather: expected an index with as many dimensions as the input (2)");
  EXPECT_ERROR_CONTAINS(gather(x, 0, zeros({1, 5}, kInt64)),
                        "gather: expected index.size(1) <= input.size(1)");
  EXPECT_ERROR_CONTAINS(gather(x, 2, zeros({1, 1}, kInt64)), "gather");
  EXPECT_ERROR_CONTAINS(scatter(x, 0, zeros({1, 3}, kInt64), ones({1, 2})),
                        "scatter: expected index.size(1) <= src.size(1)");
  EXPECT_ERROR_CONTAINS(scatter(x, 0, zeros({1, 1}, kInt64), ones({1, 1}, kFloat64)),
                        "scatter: expected src of the input's dtype float32, got float64");
  EXPECT_ERROR_CONTAINS(scatter_add(zeros({2}, kBool), 0, zeros({1}, kInt64), ones({1}, kBool)),
                        "scatter_add: expected a numeric tensor, got bool");
  EXPECT_ERROR_CONTAINS(index_add(x, 1, index_tensor({0, 1}, {2}), ones({3, 3})),
                        "index_add: expected source of shape [3, 2]");
  EXPECT_ERROR_CONTAINS(index_add(x, 0, zeros({1, 1}, kInt64), ones({1, 4})),
                        "index_add: expected a 1-D index");
  EXPECT_ERROR_CONTAINS(masked_select(x, ones({3, 4})),
                        "masked_select: expected a bool mask, got float32");
  EXPECT_ERROR_CONTAINS(masked_select(x, ones({2, 4}, kBool)), "masked_select");
  EXPECT_ERROR_CONTAINS(gather(Tensor(), 0, zeros({1}, kInt64)), "gather");
  EXPECT_ERROR_CONTAINS(scatter_add(x, 0, Tensor(), x), "scatter_add");
}

}  // namespace
}  // namespace minidl
