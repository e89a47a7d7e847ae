// cumsum, cumprod and prod on the CPU: cumprod's and prod's values and gradients against
// PyTorch's (tests/ops/indexing_reference.h; cumsum's are the operator table's), zeros in cumprod's
// and prod's input, f64 gradient checks, integer promotion, 0-d and empty tensors, 16-bit dtypes,
// thread counts, and errors.
#include "minidl/ops/scan.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "indexing_reference.h"
#include "minidl/core/autograd/gradcheck.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::bitwise_equal;
using testing::ScopedThreadCount;
using testing::wiggly;

template <size_t N>
Tensor reference(const double (&values)[N], const Shape& sizes) {
  EXPECT_EQ(static_cast<int64_t>(N), shape_numel(sizes));
  return from_host(values, sizes, kFloat64);
}

// wiggly({3, 4}) with zeros at [1, 1], [2, 0] and [2, 3], as the reference script's.
Tensor with_zeros(DType dtype = kFloat64) {
  return reference(testing::kScanZerosInput, {3, 4}).to(dtype);
}

// Runs fn on a leaf copy of x, backpropagates wiggly(out.shape, 1.0) and checks the output and
// x's gradient against PyTorch's.
template <class Fn, size_t NOut, size_t NGrad>
void expect_matches_pytorch(Fn fn, const Tensor& x, const double (&output)[NOut],
                            const Shape& output_sizes, const double (&grad)[NGrad],
                            double tolerance) {
  Tensor leaf = x.detach().requires_grad_();
  Tensor out = fn(leaf);
  EXPECT_EQ(out.sizes(), output_sizes);
  EXPECT_EQ(out.dtype(), x.dtype());
  EXPECT_TRUE(all_close(out, reference(output, output_sizes), tolerance, tolerance));
  out.backward(wiggly(output_sizes, 1.0, x.dtype()));
  EXPECT_TRUE(all_close(leaf.grad(), reference(grad, x.sizes()), tolerance, tolerance));
}

// cumsum's values and gradients against PyTorch's are rows of the operator table
// (tests/ops/op_table_samples.h: cumsum, cumsum_negative_dim).

TEST(Scan, CumprodMatchesPyTorchWithAndWithoutZeros) {
  for (DType dtype : {kFloat64, kFloat32}) {
    SCOPED_TRACE(dtype_name(dtype));
    const double tolerance = dtype == kFloat64 ? 1e-12 : 1e-5;
    expect_matches_pytorch([](const Tensor& t) { return cumprod(t, 0); }, with_zeros(dtype),
                           testing::kCumprodDim0Output, {3, 4}, testing::kCumprodDim0Grad,
                           tolerance);
    expect_matches_pytorch([](const Tensor& t) { return t.cumprod(1); }, with_zeros(dtype),
                           testing::kCumprodDim1Output, {3, 4}, testing::kCumprodDim1Grad,
                           tolerance);
    expect_matches_pytorch([](const Tensor& t) { return cumprod(t, 1); },
                           wiggly({3, 4}, 0.0, dtype), testing::kCumprodNoZerosDim1Output, {3, 4},
                           testing::kCumprodNoZerosDim1Grad, tolerance);
  }
}

TEST(Scan, ProdMatchesPyTorchWithZeros) {
  for (DType dtype : {kFloat64, kFloat32}) {
    SCOPED_TRACE(dtype_name(dtype));
    const double tolerance = dtype == kFloat64 ? 1e-12 : 1e-5;
    expect_matches_pytorch([](const Tensor& t) { return prod(t, 1, /*keepdim=*/true); },
                           with_zeros(dtype), testing::kProdDim1KeepdimOutput, {3, 1},
                           testing::kProdDim1KeepdimGrad, tolerance);
    expect_matches_pytorch([](const Tensor& t) { return t.prod(0); }, with_zeros(dtype),
                           testing::kProdDim0Output, {4}, testing::kProdDim0Grad, tolerance);
    // Rows 0 and 1: one zero in all, so only its element gets a gradient.
    expect_matches_pytorch([](const Tensor& t) { return prod(t); },
                           with_zeros(dtype).narrow(0, 0, 2).contiguous(), testing::kProdAllOutput,
                           {}, testing::kProdAllGrad, tolerance);
  }
}

TEST(ScanGradcheck, CumsumOverEveryDim) {
  Tensor x = wiggly({2, 3, 4}, 0.0, kFloat64).requires_grad_();
  for (int64_t dim : {0, 1, 2, -1}) {
    auto result = gradcheck([&](const std::vector<Tensor>& in) { return cumsum(in[0], dim); }, {x});
    EXPECT_TRUE(result) << "dim " << dim << ": " << result.message;
  }
}

// cumprod and prod are linear in each element, so central differences are exact at zero too.
TEST(ScanGradcheck, CumprodAndProdWithOneAndTwoZerosInALine) {
  Tensor x = with_zeros().requires_grad_();
  for (int64_t dim : {0, 1}) {
    auto scan = gradcheck([&](const std::vector<Tensor>& in) { return cumprod(in[0], dim); }, {x});
    EXPECT_TRUE(scan) << "cumprod dim " << dim << ": " << scan.message;
    auto product =
        gradcheck([&](const std::vector<Tensor>& in) { return prod(in[0], dim, true); }, {x});
    EXPECT_TRUE(product) << "prod dim " << dim << ": " << product.message;
  }
  Tensor one_zero = with_zeros().narrow(0, 0, 2).contiguous().requires_grad_();
  auto all = gradcheck([](const std::vector<Tensor>& in) { return prod(in[0]); }, {one_zero});
  EXPECT_TRUE(all) << all.message;
  Tensor no_zeros = wiggly({3, 5}, 0.0, kFloat64).requires_grad_();
  auto plain =
      gradcheck([](const std::vector<Tensor>& in) { return cumprod(in[0], 1); }, {no_zeros});
  EXPECT_TRUE(plain) << plain.message;
}

TEST(Scan, StridedInputsAndThreadCountsGiveTheSameBits) {
  const Tensor x = wiggly({64, 3, 50}, 0.0, kFloat32).transpose(0, 2);  // [50, 3, 64], strided
  const Tensor sum_one = [&] {
    ScopedThreadCount threads(1);
    return cumsum(x, 0);
  }();
  const Tensor prod_one = [&] {
    ScopedThreadCount threads(1);
    return cumprod(x, 2);
  }();
  ScopedThreadCount threads(4);
  EXPECT_TRUE(bitwise_equal(cumsum(x, 0), sum_one));
  EXPECT_TRUE(bitwise_equal(cumprod(x, 2), prod_one));
  EXPECT_TRUE(all_close(sum_one, cumsum(x.contiguous().to(kFloat64), 0), 1e-5, 1e-5));
}

TEST(Scan, IntegersAndBoolGiveInt64) {
  Tensor ints = tensor(std::vector<int32_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor sums = cumsum(ints, 1);
  EXPECT_EQ(sums.dtype(), kInt64);
  EXPECT_EQ(to_vector<int64_t>(sums), (std::vector<int64_t>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(to_vector<int64_t>(cumprod(ints, 0)), (std::vector<int64_t>{1, 2, 3, 4, 10, 18}));
  EXPECT_EQ(prod(ints).item<int64_t>(), 720);
  EXPECT_EQ(prod(ints, 1).dtype(), kInt64);
  Tensor mask = tensor(std::vector<int64_t>{1, 0, 1, 1}).to(kBool);
  EXPECT_EQ(to_vector<int64_t>(cumsum(mask, 0)), (std::vector<int64_t>{1, 1, 2, 3}));
}

TEST(Scan, ZeroDimAndEmptyTensors) {
  Tensor scalar = scalar_tensor(3.0, kFloat64);
  EXPECT_EQ(cumsum(scalar, 0).dim(), 0);
  EXPECT_EQ(cumprod(scalar, -1).item<double>(), 3.0);
  EXPECT_EQ(prod(scalar).item<double>(), 3.0);
  EXPECT_EQ(prod(scalar, 0).dim(), 0);
  Tensor empty_rows = zeros({2, 0});
  EXPECT_EQ(cumsum(empty_rows, 1).sizes(), (Shape{2, 0}));
  EXPECT_EQ(to_vector<float>(prod(empty_rows, 1)), (std::vector<float>{1.0f, 1.0f}));
  EXPECT_EQ(prod(empty_rows, 1, true).sizes(), (Shape{2, 1}));
  EXPECT_EQ(prod(zeros({0})).item<float>(), 1.0f);
}

TEST(Scan, SixteenBitDtypesAccumulateInFloat32) {
  // 256 in bfloat16 has neighbours 2 apart: adding 1.0 in bfloat16 would leave 256 each time,
  // accumulating in float32 reaches 256 + k exactly.
  Tensor x = ones({9}, kBFloat16);
  x.narrow(0, 0, 1).fill_(256);
  const std::vector<float> sums = to_vector<float>(cumsum(x, 0));
  EXPECT_EQ(sums[2], 258.0f);
  EXPECT_EQ(sums[8], 264.0f);
  for (DType dtype : {kFloat16, kBFloat16}) {
    const Tensor y = wiggly({4, 6}, 0.0, dtype);
    EXPECT_TRUE(all_close(cumsum(y, 1), cumsum(y.to(kFloat32), 1), 2e-2, 2e-2));
    EXPECT_TRUE(all_close(cumprod(y, 1), cumprod(y.to(kFloat32), 1), 2e-2, 2e-2));
  }
}

TEST(Scan, ErrorsNameTheOp) {
  Tensor x = zeros({2, 3});
  EXPECT_ERROR_CONTAINS(cumsum(x, 2), "cumsum");
  EXPECT_ERROR_CONTAINS(cumprod(x, -3), "cumprod");
  EXPECT_ERROR_CONTAINS(prod(x, 5), "prod");
  EXPECT_ERROR_CONTAINS(cumsum(Tensor(), 0), "cumsum");
  EXPECT_ERROR_CONTAINS(prod(Tensor()), "prod");
}

}  // namespace
}  // namespace minidl
