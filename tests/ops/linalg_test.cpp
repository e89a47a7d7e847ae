// matmul and linear on the CPU: hand-worked values, a naive triple-loop reference across
// layouts (transposed, strided, broadcast batch, vectors) and dtypes, errors, hand-worked
// gradients, and f64 gradient checks.
#include "minidl/ops/linalg.h"

#include <gtest/gtest.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "minidl/core/autograd/gradcheck.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;

// Distinct, sign-mixed values of the given shape.
Tensor wiggly(const Shape& sizes, DType dtype = kFloat32, double phase = 0.0) {
  return testing::wiggly(sizes, phase, dtype);
}

// A float64 leaf of the given shape that requires grad, for gradient checks.
Tensor leaf(const Shape& sizes, double phase = 0.0) {
  return wiggly(sizes, kFloat64, phase).requires_grad_();
}

// torch.matmul for 2-D and 3-D operands, by the definition, in double on the host:
// out[i][r][c] = sum_j a[i][r][j] * b[i][j][c], a 2-D operand or a batch of one shared by all.
Tensor reference_matmul(const Tensor& a, const Tensor& b) {
  const std::vector<double> av = to_vector<double>(a), bv = to_vector<double>(b);
  const int64_t a_batch = a.dim() == 3 ? a.size(0) : 1, b_batch = b.dim() == 3 ? b.size(0) : 1;
  const int64_t batch = std::max(a_batch, b_batch);
  const int64_t n = a.size(-2), k = a.size(-1), m = b.size(-1);
  std::vector<double> out(static_cast<size_t>(batch * n * m), 0.0);
  for (int64_t i = 0; i < batch; ++i) {
    const int64_t ai = a_batch == 1 ? 0 : i, bi = b_batch == 1 ? 0 : i;
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < m; ++c)
        for (int64_t j = 0; j < k; ++j)
          out[(i * n + r) * m + c] += av[(ai * n + r) * k + j] * bv[(bi * k + j) * m + c];
  }
  const Shape sizes = a.dim() == 3 || b.dim() == 3 ? Shape{batch, n, m} : Shape{n, m};
  return from_host(out.data(), sizes, kFloat64);
}

// ---- forward values ----

TEST(Matmul, HandWorkedTwoByThreeTimesThreeByTwo) {
  for (DType dtype : {kFloat32, kFloat64}) {
    Tensor a = arange(1, 7, 1, dtype).view({2, 3});   // [[1, 2, 3], [4, 5, 6]]
    Tensor b = arange(7, 13, 1, dtype).view({3, 2});  // [[7, 8], [9, 10], [11, 12]]
    Tensor out = matmul(a, b);
    EXPECT_EQ(out.dtype(), dtype);
    // [1*7 + 2*9 + 3*11, 1*8 + 2*10 + 3*12], [4*7 + 5*9 + 6*11, 4*8 + 5*10 + 6*12]
    EXPECT_TRUE(all_close(out, tensor({58, 64, 139, 154}, kFloat64).view({2, 2}), 0, 0));
    EXPECT_TRUE(all_close(a.matmul(b), out, 0, 0));
  }
}

TEST(Matmul, MatchesReferenceForTransposedAndStridedOperands) {
  Tensor a = wiggly({5, 4}), b = wiggly({4, 3}, kFloat32, 1.0);
  // Transposed views (passed to BLAS as transposes), a column slice with a step (copied),
  // and a row slice (a leading dimension larger than the row).
  Tensor a_transposed = wiggly({4, 5}).t(), b_transposed = wiggly({3, 4}, kFloat32, 1.0).t();
  Tensor a_stepped = wiggly({5, 8}).slice(1, 0, 8, 2);
  Tensor b_rows = wiggly({4, 7}, kFloat32, 1.0).narrow(1, 2, 3);
  ASSERT_FALSE(a_transposed.is_contiguous());
  ASSERT_FALSE(a_stepped.is_contiguous());
  ASSERT_FALSE(b_rows.is_contiguous());
  for (const Tensor& left : {a, a_transposed, a_stepped})
    for (const Tensor& right : {b, b_transposed, b_rows})
      EXPECT_TRUE(all_close(matmul(left, right), reference_matmul(left, right), 1e-5, 1e-5));
}

TEST(Matmul, SizeOneDimensionsWithOddStrides) {
  // A row or column of a transposed view has a stride that BLAS would reject as is.
  Tensor row = wiggly({4, 1}).t();     // [1, 4], strides (1, 1)
  Tensor column = wiggly({1, 4}).t();  // [4, 1], strides (1, 4)
  EXPECT_TRUE(all_close(matmul(row, column), reference_matmul(row, column), 1e-6, 1e-6));
  EXPECT_TRUE(all_close(matmul(column, row), reference_matmul(column, row), 1e-6, 1e-6));
}

TEST(Matmul, BatchedAndBroadcastBatches) {
  Tensor a = wiggly({3, 4, 5}), b = wiggly({3, 5, 2}, kFloat32, 0.5);
  Tensor shared_a = wiggly({4, 5}), shared_b = wiggly({5, 2}, kFloat32, 0.5);
  Tensor one_a = wiggly({1, 4, 5}), one_b = wiggly({1, 5, 2}, kFloat32, 0.5);
  // Per-batch transposes (no fold into one GEMM possible) and a folded batch.
  Tensor a_transposed = wiggly({3, 5, 4}).transpose(1, 2);
  const std::vector<std::pair<Tensor, Tensor>> cases = {{a, b},
                                                        {a, shared_b},
                                                        {shared_a, b},
                                                        {a, one_b},
                                                        {one_a, b},
                                                        {a_transposed, shared_b},
                                                        {a_transposed, b},
                                                        {one_a, one_b}};
  for (const auto& [left, right] : cases) {
    Tensor out = matmul(left, right);
    EXPECT_EQ(out.dim(), 3);
    EXPECT_TRUE(all_close(out, reference_matmul(left, right), 1e-5, 1e-5))
        << shape_str(left.sizes()) << " @ " << shape_str(right.sizes());
  }
}

TEST(Matmul, BatchDimensionsBeyondThreeBroadcastAsTorch) {
  const std::vector<std::tuple<Tensor, Tensor, Shape>> cases = {
      {wiggly({2, 3, 4, 5}), wiggly({2, 3, 5, 2}, kFloat32, 0.5), {2, 3, 4, 2}},
      {wiggly({2, 1, 4, 5}), wiggly({3, 5, 2}, kFloat32, 0.5), {2, 3, 4, 2}},
      {wiggly({1, 3, 4, 5}), wiggly({2, 1, 5, 2}, kFloat32, 0.5), {2, 3, 4, 2}},
      {wiggly({2, 3, 4, 5}), wiggly({5, 2}, kFloat32, 0.5), {2, 3, 4, 2}},
      {wiggly({4, 5}), wiggly({2, 3, 5, 2}, kFloat32, 0.5), {2, 3, 4, 2}},
      {wiggly({2, 2, 1, 4, 5}), wiggly({3, 5, 2}, kFloat32, 0.5), {2, 2, 3, 4, 2}},
      // Attention's q @ k^T: k a transposed view [B, H, D, S].
      {wiggly({2, 3, 4, 5}), wiggly({2, 3, 6, 5}, kFloat32, 0.5).transpose(-2, -1), {2, 3, 4, 6}},
  };
  for (const auto& [left, right, expected_sizes] : cases) {
    const Tensor out = matmul(left, right);
    ASSERT_EQ(out.sizes(), expected_sizes)
        << shape_str(left.sizes()) << " @ " << shape_str(right.sizes());
    // Each matrix of the result against the definition on the broadcast operands' matrices.
    const int64_t n = left.size(-2), k = left.size(-1), m = right.size(-1);
    const Shape batch(expected_sizes.begin(), expected_sizes.end() - 2);
    Shape left_sizes = batch, right_sizes = batch;
    left_sizes.insert(left_sizes.end(), {n, k});
    right_sizes.insert(right_sizes.end(), {k, m});
    const Tensor left_matrices = left.expand(left_sizes).reshape({-1, n, k});
    const Tensor right_matrices = right.expand(right_sizes).reshape({-1, k, m});
    EXPECT_TRUE(all_close(out.reshape({-1, n, m}), reference_matmul(left_matrices, right_matrices),
                          1e-5, 1e-5))
        << shape_str(left.sizes()) << " @ " << shape_str(right.sizes());
  }
  // Vectors against a batch of 4-D matrices, as torch.matmul.
  EXPECT_EQ(matmul(wiggly({5}), wiggly({2, 3, 5, 2})).sizes(), (Shape{2, 3, 2}));
  EXPECT_EQ(matmul(wiggly({2, 3, 4, 5}), wiggly({5})).sizes(), (Shape{2, 3, 4}));
}

TEST(Bmm, IsMatmulOfSameSizedBatchesOnly) {
  Tensor a = wiggly({3, 4, 5}), b = wiggly({3, 5, 2}, kFloat32, 0.5);
  EXPECT_TRUE(all_close(bmm(a, b), reference_matmul(a, b), 1e-5, 1e-5));
  EXPECT_ERROR_CONTAINS(bmm(wiggly({4, 5}), b),
                        "bmm: expected 3-D operands, got shapes [4, 5] and [3, 5, 2]");
  EXPECT_ERROR_CONTAINS(bmm(wiggly({1, 4, 5}), b),
                        "bmm: expected [b, n, k] and [b, k, m] "
                        "operands, got shapes [1, 4, 5] and [3, 5, 2]");
  EXPECT_ERROR_CONTAINS(bmm(Tensor(), b), "bmm: argument 'input' is an undefined tensor");
}

TEST(Matmul, ManySmallMatricesAndLargeProductsSplitOverThreads) {
  // A batch of small products is spread over the threads one matrix each; a large product
  // (3.2 million multiply-adds) is split into blocks of rows, also when a is a transposed view
  // and in a batch, for 1, 2 and 3 threads.
  Tensor a = wiggly({64, 32, 24}), b = wiggly({64, 24, 16}, kFloat32, 1.0);
  EXPECT_TRUE(all_close(matmul(a, b), reference_matmul(a, b), 1e-5, 1e-5));
  const Tensor large_b = wiggly({160, 100}, kFloat32, 1.0);
  const Tensor large_a = wiggly({200, 160}), large_a_transposed = wiggly({160, 200}).t();
  const Tensor batch_a = wiggly({2, 200, 160}), batch_b = wiggly({2, 160, 100}, kFloat32, 1.0);
  for (int threads : {1, 2, 3}) {
    const testing::ScopedThreadCount thread_count(threads);
    for (const Tensor& left : {large_a, large_a_transposed})
      EXPECT_TRUE(all_close(matmul(left, large_b), reference_matmul(left, large_b), 1e-4, 1e-5))
          << "threads " << threads << ", a contiguous: " << left.is_contiguous();
    EXPECT_TRUE(all_close(matmul(batch_a, batch_b), reference_matmul(batch_a, batch_b), 1e-4, 1e-5))
        << "threads " << threads;
  }
}

TEST(Matmul, VectorsAsTorch) {
  Tensor v = tensor({1, 2, 3}, kFloat32);
  Tensor m = arange(6, kFloat32).view({3, 2});  // [[0, 1], [2, 3], [4, 5]]
  Tensor dot = matmul(v, v);
  EXPECT_EQ(dot.dim(), 0);
  EXPECT_FLOAT_EQ(dot.item<float>(), 1 * 1 + 2 * 2 + 3 * 3);
  Tensor row = matmul(v, m);  // [1*0 + 2*2 + 3*4, 1*1 + 2*3 + 3*5]
  EXPECT_EQ(row.sizes(), (Shape{2}));
  EXPECT_TRUE(all_close(row, tensor({16, 22}, kFloat32), 0, 0));
  Tensor column = matmul(m.t(), v);  // the same numbers
  EXPECT_EQ(column.sizes(), (Shape{2}));
  EXPECT_TRUE(all_close(column, tensor({16, 22}, kFloat32), 0, 0));
  Tensor batched = matmul(wiggly({2, 4, 3}), v);
  EXPECT_EQ(batched.sizes(), (Shape{2, 4}));
  EXPECT_TRUE(all_close(batched, reference_matmul(wiggly({2, 4, 3}), v.view({3, 1})).view({2, 4}),
                        1e-5, 1e-5));
}

TEST(Matmul, EmptyInnerDimensionGivesZerosAndEmptyShapesWork) {
  Tensor out = matmul(zeros({2, 0}), zeros({0, 3}));
  EXPECT_EQ(out.sizes(), (Shape{2, 3}));
  EXPECT_TRUE(all_close(out, zeros({2, 3}), 0, 0));
  EXPECT_EQ(matmul(zeros({0, 4}), zeros({4, 3})).sizes(), (Shape{0, 3}));
  EXPECT_EQ(matmul(zeros({2, 0, 4}), zeros({4, 3})).sizes(), (Shape{2, 0, 3}));
}

TEST(Matmul, HalfAndBFloat16ComputeInFloat) {
  Tensor a = wiggly({6, 5}), b = wiggly({5, 4}, kFloat32, 2.0);
  for (DType dtype : {kFloat16, kBFloat16}) {
    Tensor a16 = a.to(dtype), b16 = b.to(dtype);
    Tensor out = matmul(a16, b16);
    EXPECT_EQ(out.dtype(), dtype);
    // The exact product of the rounded inputs, rounded once more to the 16-bit type.
    Tensor expected = reference_matmul(a16.to(kFloat64), b16.to(kFloat64));
    const double rounding = dtype == kFloat16 ? 1e-3 : 8e-3;
    EXPECT_TRUE(all_close(out, expected, rounding, rounding));
  }
}

TEST(Linear, HandWorkedWithAndWithoutBias) {
  Tensor x = arange(1, 7, 1, kFloat32).view({2, 3});                   // [[1, 2, 3], [4, 5, 6]]
  Tensor weight = tensor({1, 0, -1, 2, 1, 0}, kFloat32).view({2, 3});  // [[1, 0, -1], [2, 1, 0]]
  Tensor bias = tensor({10, 20}, kFloat32);
  // x W^T = [[1 - 3, 2 + 2], [4 - 6, 8 + 5]] = [[-2, 4], [-2, 13]]
  EXPECT_TRUE(all_close(linear(x, weight), tensor({-2, 4, -2, 13}, kFloat32).view({2, 2}), 0, 0));
  EXPECT_TRUE(
      all_close(linear(x, weight, bias), tensor({8, 24, 8, 33}, kFloat32).view({2, 2}), 0, 0));
}

TEST(Linear, LeadingDimensionsVectorsAndDtypes) {
  Tensor weight = wiggly({4, 3}, kFloat32, 1.0), bias = wiggly({4}, kFloat32, 2.0);
  Tensor x = wiggly({2, 5, 3});
  Tensor out = linear(x, weight, bias);
  EXPECT_EQ(out.sizes(), (Shape{2, 5, 4}));
  Tensor expected = reference_matmul(x.reshape({10, 3}), weight.t()).view({2, 5, 4});
  EXPECT_TRUE(all_close(out, expected.add(bias.to(kFloat64).view({1, 1, 4})), 1e-5, 1e-5));
  // A 1-D input gives a 1-D output, as torch.nn.functional.linear.
  Tensor v = wiggly({3});
  EXPECT_EQ(linear(v, weight, bias).sizes(), (Shape{4}));
  EXPECT_TRUE(
      all_close(linear(v, weight, bias), linear(v.view({1, 3}), weight, bias).view({4}), 0, 0));
  // A transposed weight view and a non-contiguous input.
  Tensor weight_transposed = wiggly({3, 4}, kFloat32, 1.0).t();
  Tensor x_transposed = wiggly({3, 5}).t();
  EXPECT_TRUE(all_close(
      linear(x_transposed, weight_transposed, bias),
      reference_matmul(x_transposed, weight_transposed.t()).add(bias.to(kFloat64).view({1, 4})),
      1e-5, 1e-5));
  for (DType dtype : {kFloat16, kBFloat16}) {
    Tensor x16 = x.to(dtype), weight16 = weight.to(dtype), bias16 = bias.to(dtype);
    Tensor out16 = linear(x16, weight16, bias16);
    EXPECT_EQ(out16.dtype(), dtype);
    // The exact result for the rounded inputs, rounded once more to the 16-bit type.
    Tensor exact = reference_matmul(x16.to(kFloat64).reshape({10, 3}), weight16.to(kFloat64).t())
                       .add(bias16.to(kFloat64).view({1, 4}))
                       .view({2, 5, 4});
    const double rounding = dtype == kFloat16 ? 1e-3 : 8e-3;
    EXPECT_TRUE(all_close(out16, exact, rounding, rounding)) << dtype;
  }
  // No input features: the output is the bias (or zeros).
  EXPECT_TRUE(all_close(linear(zeros({2, 0}), zeros({4, 0}), bias),
                        bias.view({1, 4}).expand({2, 4}), 0, 0));
  EXPECT_TRUE(all_close(linear(zeros({2, 0}), zeros({4, 0})), zeros({2, 4}), 0, 0));
}

TEST(Matmul, Tf32IsOffByDefaultAndCanBeSwitched) {
  EXPECT_FALSE(allow_tf32());
  set_allow_tf32(true);
  EXPECT_TRUE(allow_tf32());
  // The CPU path is exact float32 either way.
  Tensor a = wiggly({3, 4}), b = wiggly({4, 2}, kFloat32, 1.0);
  EXPECT_TRUE(all_close(matmul(a, b), reference_matmul(a, b), 1e-6, 1e-6));
  set_allow_tf32(false);
  EXPECT_FALSE(allow_tf32());
}

// ---- errors ----

TEST(Matmul, BadOperandsAreErrorsNamingShapes) {
  EXPECT_ERROR_CONTAINS(matmul(zeros({2, 3}), zeros({4, 5})),
                        "matmul: shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)");
  EXPECT_ERROR_CONTAINS(matmul(zeros({2, 3}), zeros({4})),
                        "matmul: shapes [2, 3] and [4] cannot be multiplied (3 != 4)");
  EXPECT_ERROR_CONTAINS(
      matmul(scalar_tensor(1), zeros({2, 2})),
      "matmul: expected operands with at least 1 dimension, got shapes [] and [2, 2]");
  EXPECT_ERROR_CONTAINS(matmul(zeros({2, 3, 2, 2}), zeros({4, 2, 2})),
                        "matmul: batch sizes 3 and 4 of shapes [2, 3, 2, 2] and [4, 2, 2] cannot "
                        "be broadcast");
  EXPECT_ERROR_CONTAINS(matmul(zeros({2, 3}), zeros({3, 2}, kFloat64)),
                        "matmul: expected operands of the same dtype, got float32 and float64 "
                        "(shapes [2, 3] and [3, 2])");
  EXPECT_ERROR_CONTAINS(matmul(zeros({2, 3}, kInt64), zeros({3, 2}, kInt64)),
                        "matmul: expected floating-point operands (float32, float64, float16 or "
                        "bfloat16), got int64 (shapes [2, 3] and [3, 2])");
  EXPECT_ERROR_CONTAINS(matmul(zeros({2, 3, 4}), zeros({3, 4, 5})),
                        "matmul: batch sizes 2 and 3 of shapes [2, 3, 4] and [3, 4, 5] cannot be "
                        "broadcast");
  EXPECT_ERROR_CONTAINS(matmul(Tensor(), zeros({2})),
                        "matmul: argument 'input' is an undefined tensor (default-constructed)");
}

TEST(Linear, BadOperandsAreErrorsNamingShapes) {
  EXPECT_ERROR_CONTAINS(linear(zeros({2, 3}), zeros({4, 5})),
                        "linear: input of shape [2, 3] and weight of shape [4, 5] are "
                        "incompatible (in_features 3 != 5)");
  EXPECT_ERROR_CONTAINS(linear(zeros({2, 3}), zeros({3})),
                        "linear: expected a 2-D weight [out_features, in_features], got shape [3]");
  EXPECT_ERROR_CONTAINS(linear(zeros({2, 3}), zeros({4, 3}), zeros({3})),
                        "linear: expected a bias of shape [4] for weight of shape [4, 3], got "
                        "shape [3]");
  EXPECT_ERROR_CONTAINS(linear(zeros({2, 3}), zeros({4, 3}, kFloat64)),
                        "linear: expected input, weight and bias of one dtype and device, got "
                        "input float32 on cpu and weight float64 on cpu");
  EXPECT_ERROR_CONTAINS(linear(scalar_tensor(1), zeros({4, 3})),
                        "linear: expected an input [..., in_features], got a 0-d tensor");
  EXPECT_ERROR_CONTAINS(linear(zeros({2, 3}, kInt32), zeros({4, 3}, kInt32)),
                        "linear: expected floating-point tensors");
}

// ---- gradients ----

TEST(Matmul, HandWorkedGradients) {
  Tensor a = arange(1, 7, 1, kFloat32).view({2, 3}).requires_grad_();  // [[1, 2, 3], [4, 5, 6]]
  Tensor b =
      arange(7, 13, 1, kFloat32).view({3, 2}).requires_grad_();  // [[7, 8], [9, 10], [11, 12]]
  matmul(a, b).backward(ones({2, 2}));
  // grad_a = ones @ b^T: every row holds b's row sums; grad_b = a^T @ ones: a's column sums.
  EXPECT_TRUE(all_close(a.grad(), tensor({15, 19, 23, 15, 19, 23}, kFloat32).view({2, 3}), 0, 0));
  EXPECT_TRUE(all_close(b.grad(), tensor({5, 5, 7, 7, 9, 9}, kFloat32).view({3, 2}), 0, 0));
}

TEST(Matmul, HandWorkedGradientOfASharedMatrixSumsTheBatch) {
  Tensor a = ones({3, 2, 2});
  Tensor b = arange(4, kFloat32).view({2, 2}).requires_grad_();
  matmul(a, b).backward(ones({3, 2, 2}));
  // Each batch contributes a^T @ ones = [[2, 2], [2, 2]]; three batches.
  EXPECT_TRUE(all_close(b.grad(), full({2, 2}, 6), 0, 0));
}

TEST(Matmul, GradientOfAnInputChangedInPlaceIsAnError) {
  Tensor a = wiggly({2, 3}).requires_grad_();
  Tensor b = wiggly({3, 2});
  Tensor out = matmul(a, b);
  b.mul_(2.0);
  EXPECT_ERROR_CONTAINS(out.backward(ones({2, 2})), "was modified by an in-place operation");
}

TEST(MatmulGradcheck, Matrices) {
  auto fn = [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); };
  GradcheckResult result = gradcheck(fn, {leaf({3, 4}), leaf({4, 2}, 1.0)});
  EXPECT_TRUE(result.ok) << result.message;
}

TEST(MatmulGradcheck, TransposedOperands) {
  auto fn = [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); };
  Tensor a = wiggly({4, 3}, kFloat64).t().requires_grad_();
  Tensor b = wiggly({2, 4}, kFloat64, 1.0).t().requires_grad_();
  ASSERT_FALSE(a.is_contiguous());
  GradcheckResult result = gradcheck(fn, {a, b});
  EXPECT_TRUE(result.ok) << result.message;
}

TEST(MatmulGradcheck, Batched) {
  auto fn = [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); };
  Tensor a = wiggly({2, 4, 3}, kFloat64).transpose(1, 2).requires_grad_();  // [2, 3, 4]
  GradcheckResult result = gradcheck(fn, {a, leaf({2, 4, 2}, 1.0)});
  EXPECT_TRUE(result.ok) << result.message;
}

TEST(MatmulGradcheck, BroadcastBatch) {
  auto fn = [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); };
  for (const auto& [a_sizes, b_sizes] :
       std::vector<std::pair<Shape, Shape>>{{{3, 2, 4}, {4, 2}},
                                            {{2, 4}, {3, 4, 2}},
                                            {{1, 2, 4}, {3, 4, 2}},
                                            {{3, 2, 4}, {1, 4, 2}}}) {
    GradcheckResult result = gradcheck(fn, {leaf(a_sizes), leaf(b_sizes, 1.0)});
    EXPECT_TRUE(result.ok) << shape_str(a_sizes) << " @ " << shape_str(b_sizes) << ": "
                           << result.message;
  }
}

TEST(MatmulGradcheck, BatchDimensionsBeyondThree) {
  auto fn = [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); };
  for (const auto& [a_sizes, b_sizes] :
       std::vector<std::pair<Shape, Shape>>{{{2, 2, 3, 4}, {2, 2, 4, 2}},
                                            {{2, 1, 3, 4}, {2, 4, 2}},
                                            {{2, 2, 3, 4}, {4, 2}},
                                            {{3, 4}, {2, 2, 4, 2}},
                                            {{4}, {2, 2, 4, 2}}}) {
    GradcheckResult result = gradcheck(fn, {leaf(a_sizes), leaf(b_sizes, 1.0)});
    EXPECT_TRUE(result.ok) << shape_str(a_sizes) << " @ " << shape_str(b_sizes) << ": "
                           << result.message;
  }
}

TEST(MatmulGradcheck, Vectors) {
  auto fn = [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); };
  for (const auto& [a_sizes, b_sizes] : std::vector<std::pair<Shape, Shape>>{
           {{3}, {3}}, {{3}, {3, 2}}, {{2, 3}, {3}}, {{2, 4, 3}, {3}}, {{3}, {2, 3, 4}}}) {
    GradcheckResult result = gradcheck(fn, {leaf(a_sizes), leaf(b_sizes, 1.0)});
    EXPECT_TRUE(result.ok) << shape_str(a_sizes) << " @ " << shape_str(b_sizes) << ": "
                           << result.message;
  }
}

TEST(LinearGradcheck, WithBiasOverLeadingDimensions) {
  auto fn = [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); };
  GradcheckResult result = gradcheck(fn, {leaf({2, 3, 4}), leaf({5, 4}, 1.0), leaf({5}, 2.0)});
  EXPECT_TRUE(result.ok) << result.message;
}

TEST(LinearGradcheck, WithoutBiasAndTransposedOperands) {
  auto fn = [](const std::vector<Tensor>& in) { return linear(in[0], in[1]); };
  Tensor x = wiggly({4, 3}, kFloat64).t().requires_grad_();            // [3, 4]
  Tensor weight = wiggly({4, 2}, kFloat64, 1.0).t().requires_grad_();  // [2, 4]
  GradcheckResult result = gradcheck(fn, {x, weight});
  EXPECT_TRUE(result.ok) << result.message;
}

TEST(LinearGradcheck, OnlySomeInputsRequireGrad) {
  auto fn = [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); };
  GradcheckResult frozen_weight =
      gradcheck(fn, {leaf({3, 4}), wiggly({2, 4}, kFloat64, 1.0), leaf({2}, 2.0)});
  EXPECT_TRUE(frozen_weight.ok) << frozen_weight.message;
  GradcheckResult frozen_input =
      gradcheck(fn, {wiggly({3, 4}, kFloat64), leaf({2, 4}, 1.0), wiggly({2}, kFloat64, 2.0)});
  EXPECT_TRUE(frozen_input.ok) << frozen_input.message;
}

}  // namespace
}  // namespace minidl
