// embedding on the CPU: values and gradients against PyTorch's (tests/ops/embedding_reference.h),
// index dtypes and shapes, padding_idx, f64 gradient checks, the weight gradient's bytes at
// several thread counts, and errors.
#include "minidl/ops/embedding.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "embedding_reference.h"
#include "minidl/core/autocast.h"
#include "minidl/core/autograd/gradcheck.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::bitwise_equal;
using testing::ScopedThreadCount;
using testing::wiggly;

// The indices of the reference: [[4, 0, 4], [2, 4, 1]].
Tensor reference_indices(DType dtype = kInt64) {
  return tensor(std::vector<int64_t>{4, 0, 4, 2, 4, 1}, {2, 3}).to(dtype);
}

std::optional<int64_t> padding_of(const testing::EmbeddingReference& reference) {
  return reference.has_padding_idx ? std::optional<int64_t>(reference.padding_idx) : std::nullopt;
}

// `count` indices in [0, rows), most of them on a few rows (as a token stream's are).
std::vector<int64_t> skewed_indices(int64_t count, int64_t rows) {
  std::vector<int64_t> values(static_cast<size_t>(count));
  uint64_t state = 12345;
  for (auto& value : values) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const uint64_t draw = state >> 33;
    value = draw % 4 == 0 ? static_cast<int64_t>(draw % static_cast<uint64_t>(rows))
                          : static_cast<int64_t>(draw % 3);
  }
  return values;
}

TEST(Embedding, MatchesPyTorchInFloat64AndFloat32) {
  for (const testing::EmbeddingReference& reference : testing::kEmbeddingReferences) {
    for (DType dtype : {kFloat64, kFloat32}) {
      SCOPED_TRACE(std::string(reference.name) + " " + std::string(dtype_name(dtype)));
      Tensor weight = wiggly({5, 3}, 0.0, dtype).requires_grad_();
      Tensor out = embedding(weight, reference_indices(), padding_of(reference));
      EXPECT_EQ(out.sizes(), (Shape{2, 3, 3}));
      EXPECT_EQ(out.dtype(), dtype);
      const double tolerance = dtype == kFloat64 ? 1e-12 : 1e-6;
      EXPECT_TRUE(
          all_close(out, from_host(reference.output, {2, 3, 3}, kFloat64), tolerance, tolerance));
      out.backward(wiggly({2, 3, 3}, 1.0, dtype));
      EXPECT_TRUE(all_close(weight.grad(), from_host(reference.weight_grad, {5, 3}, kFloat64),
                            tolerance, tolerance));
    }
  }
}

TEST(Embedding, Int32AndInt64IndicesAgree) {
  Tensor weight = wiggly({5, 3}).requires_grad_();
  Tensor weight32 = weight.detach().clone().requires_grad_();
  Tensor out = embedding(weight, reference_indices(kInt64), 4);
  Tensor out32 = embedding(weight32, reference_indices(kInt32), 4);
  EXPECT_TRUE(bitwise_equal(out, out32));
  Tensor grad = wiggly({2, 3, 3}, 1.0);
  out.backward(grad);
  out32.backward(grad);
  EXPECT_TRUE(bitwise_equal(weight.grad(), weight32.grad()));
}

TEST(Embedding, IndicesOfAnyShape) {
  Tensor weight = arange(12, kFloat32).view({4, 3});  // row r holds 3r, 3r + 1, 3r + 2
  Tensor scalar_index = embedding(weight, scalar_tensor(2, kInt64));
  EXPECT_EQ(scalar_index.sizes(), (Shape{3}));
  EXPECT_EQ(to_vector<float>(scalar_index), (std::vector<float>{6, 7, 8}));
  Tensor none = embedding(weight, empty({2, 0}, kInt64));
  EXPECT_EQ(none.sizes(), (Shape{2, 0, 3}));
  // A transposed (non-contiguous) index tensor: [[1, 3], [0, 2]] read as [[1, 0], [3, 2]].
  Tensor transposed = tensor(std::vector<int64_t>{1, 3, 0, 2}, {2, 2}).t();
  Tensor out = embedding(weight, transposed);
  EXPECT_EQ(out.sizes(), (Shape{2, 2, 3}));
  EXPECT_EQ(to_vector<float>(out), (std::vector<float>{3, 4, 5, 0, 1, 2, 9, 10, 11, 6, 7, 8}));
  // A non-contiguous weight is read through its layout.
  Tensor weight_t = arange(12, kFloat32).view({3, 4}).t();  // [4, 3], row r = r, r + 4, r + 8
  EXPECT_EQ(to_vector<float>(embedding(weight_t, tensor(std::vector<int64_t>{3, 0}))),
            (std::vector<float>{3, 7, 11, 0, 4, 8}));
}

TEST(Embedding, EmptyIndicesGiveAZeroGradient) {
  Tensor weight = wiggly({4, 2}).requires_grad_();
  embedding(weight, empty({0}, kInt64)).sum().backward();
  EXPECT_TRUE(all_close(weight.grad(), zeros({4, 2}), 0, 0));
}

TEST(Embedding, PaddingRowGetsNoGradientAndForwardIsUnchanged) {
  Tensor weight = wiggly({5, 3}).requires_grad_();
  Tensor indices = reference_indices();
  EXPECT_TRUE(bitwise_equal(embedding(weight, indices, 4), embedding(weight, indices)));
  Tensor out = embedding(weight, indices, -1);  // the last row, 4
  out.backward(ones_like(out));
  // Row 4 is named three times but padded; 0, 1 and 2 once each; 3 never.
  EXPECT_EQ(to_vector<float>(weight.grad()),
            (std::vector<float>{1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0}));
}

TEST(Embedding, SixteenBitWeightsSumInFloat32AndRoundOnce) {
  // 300 terms of 1/3 each: rounding the running sum at each step would end at 104 in bfloat16
  // and 98.4375 in float16; summed in float32 and rounded once, both give 100.
  for (DType dtype : {kBFloat16, kFloat16}) {
    Tensor weight = zeros({2, 1}, dtype).requires_grad_();
    Tensor out = embedding(weight, zeros({300}, kInt64));
    out.backward(full({300, 1}, 1.0 / 3.0, dtype));
    const float term = static_cast<float>(to_vector<double>(full({1}, 1.0 / 3.0, dtype))[0]);
    float sum = 0.0f;
    for (int i = 0; i < 300; ++i) sum += term;
    EXPECT_EQ(to_vector<double>(weight.grad()),
              to_vector<double>(tensor(std::vector<float>{sum, 0.0f}, {2, 1}).to(dtype)))
        << dtype;
  }
}

TEST(Embedding, WeightGradientHasTheSameBytesAtAnyThreadCount) {
  const int64_t rows = 64, dim = 16, count = 20000;
  const std::vector<int64_t> index_values = skewed_indices(count, rows);
  Tensor indices = tensor(index_values, {count / 100, 100});
  for (DType dtype : {kFloat32, kBFloat16, kFloat64}) {
    Tensor grad = wiggly({count / 100, 100, dim}, 2.0, dtype);
    // The documented order: each row from zero, in ascending position, in the accumulation type.
    const std::vector<double> grad_values = to_vector<double>(grad);
    std::vector<double> expected(static_cast<size_t>(rows * dim), 0.0);
    std::vector<float> expected_float(expected.size(), 0.0f);
    for (int64_t j = 0; j < count; ++j)
      for (int64_t c = 0; c < dim; ++c) {
        const size_t to = static_cast<size_t>(index_values[j] * dim + c);
        expected[to] += grad_values[static_cast<size_t>(j * dim + c)];
        expected_float[to] += static_cast<float>(grad_values[static_cast<size_t>(j * dim + c)]);
      }
    Tensor expected_grad = dtype == kFloat64 ? from_host(expected.data(), {rows, dim}, kFloat64)
                                             : tensor(expected_float, {rows, dim}).to(dtype);
    for (int64_t threads : {1, 2, 4}) {
      ScopedThreadCount thread_count(threads);
      Tensor weight = zeros({rows, dim}, dtype).requires_grad_();
      embedding(weight, indices).backward(grad);
      EXPECT_TRUE(bitwise_equal(weight.grad(), expected_grad))
          << dtype << ", " << threads << " threads";
    }
  }
}

// padding_idx is left out: its row's gradient is zero by definition, not the derivative (PyTorch's
// gradcheck would fail it too); PaddingRowGetsNoGradientAndForwardIsUnchanged covers it.
TEST(EmbeddingGradcheck, RepeatedIndices) {
  auto fn = [](const std::vector<Tensor>& in) {
    return embedding(in[0], tensor(std::vector<int64_t>{3, 0, 3, 1, 3, 0}, {2, 3}));
  };
  GradcheckResult result = gradcheck(fn, {wiggly({5, 4}, 0.0, kFloat64).requires_grad_()});
  EXPECT_TRUE(result.ok) << result.message;
  auto with_int32 = [](const std::vector<Tensor>& in) {
    return embedding(in[0], tensor(std::vector<int32_t>{2, 2, 1}));
  };
  result = gradcheck(with_int32, {wiggly({3, 2}, 1.0, kFloat64).requires_grad_()});
  EXPECT_TRUE(result.ok) << result.message;
}

// As in PyTorch, embedding is in none of autocast's lists: the output has the weight's dtype.
TEST(Embedding, AutocastLeavesTheWeightsDtype) {
  Tensor indices = reference_indices();
  for (DType low : {kBFloat16, kFloat16}) {
    amp::AutocastGuard autocast(low);
    EXPECT_EQ(embedding(wiggly({5, 3}), indices).dtype(), kFloat32);
    EXPECT_EQ(embedding(wiggly({5, 3}, 0.0, low), indices).dtype(), low);
  }
}

TEST(Embedding, BadArgumentsAreErrors) {
  Tensor weight = zeros({256, 2});
  std::vector<int64_t> values(10, 1);
  values[7] = 300;
  EXPECT_ERROR_CONTAINS(embedding(weight, tensor(values)),
                        "embedding: index 300 at position 7 is out of range for an embedding "
                        "table of 256 rows");
  // Positions count through the flattened indices; int32 indices are checked alike.
  EXPECT_ERROR_CONTAINS(embedding(weight, tensor(std::vector<int32_t>{0, 1, 2, -1}, {2, 2})),
                        "embedding: index -1 at position 3 is out of range for an embedding "
                        "table of 256 rows");
  EXPECT_ERROR_CONTAINS(embedding(weight, tensor(std::vector<float>{1})),
                        "embedding: expected int64 or int32 indices, got float32");
  EXPECT_ERROR_CONTAINS(embedding(zeros({4}), tensor(std::vector<int64_t>{1})),
                        "embedding: expected a 2-D weight [num_embeddings, embedding_dim], got "
                        "shape [4]");
  EXPECT_ERROR_CONTAINS(embedding(zeros({4, 2}, kInt64), tensor(std::vector<int64_t>{1})),
                        "embedding: expected a floating-point weight");
  EXPECT_ERROR_CONTAINS(embedding(zeros({4, 2}), tensor(std::vector<int64_t>{1}), 4),
                        "embedding: expected padding_idx in [-4, 4) for an embedding table of 4 "
                        "rows, got 4");
  EXPECT_ERROR_CONTAINS(embedding(zeros({4, 2}), tensor(std::vector<int64_t>{1}), -5), "got -5");
}

}  // namespace
}  // namespace minidl
