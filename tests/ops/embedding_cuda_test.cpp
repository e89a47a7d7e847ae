// embedding on CUDA against the CPU: the forward, and the weight gradient, which the two
// backends sum in one order (Note [Deterministic embedding backward] in ops/embedding.cpp), so
// it must match the CPU's to the bit in float32 and the 16-bit dtypes and repeat run to run;
// out-of-range indices raised at the next sync point (Note [Deferred device errors] in
// core/cuda/device_error.h); no cudaMalloc once warm.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "minidl/core/cuda/caching_allocator.h"
#include "minidl/core/cuda/device.h"
#include "minidl/core/cuda/stream.h"
#include "minidl/ops/embedding.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::bitwise_equal;
using testing::wiggly;

// `count` indices in [0, rows), most of them on rows 0, 1 and 2 (long runs after the sort).
std::vector<int64_t> skewed_indices(int64_t count, int64_t rows) {
  std::vector<int64_t> values(static_cast<size_t>(count));
  uint64_t state = 777;
  for (auto& value : values) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const uint64_t draw = state >> 33;
    value = draw % 4 == 0 ? static_cast<int64_t>(draw % static_cast<uint64_t>(rows))
                          : static_cast<int64_t>(draw % 3);
  }
  return values;
}

// The weight gradient of embedding(weight, indices, padding_idx) for the upstream `grad`, on
// the device of `indices`.
Tensor weight_gradient(const Tensor& weight, const Tensor& indices, const Tensor& grad,
                       std::optional<int64_t> padding_idx = std::nullopt) {
  Tensor leaf = weight.detach().to(indices.device()).requires_grad_();
  embedding(leaf, indices, padding_idx).backward(grad.to(indices.device()));
  return leaf.grad();
}

TEST(EmbeddingCuda, ForwardMatchesCpuForDtypesAndIndexTypes) {
  SKIP_WITHOUT_CUDA();
  Tensor indices = tensor(std::vector<int64_t>{6, 0, 6, 3, 1, 6, 2, 0}, {2, 4});
  for (DType dtype : {kFloat32, kFloat16, kBFloat16}) {
    Tensor weight = wiggly({7, 5}, 0.0, dtype);
    for (DType index_dtype : {kInt64, kInt32}) {
      Tensor typed = indices.to(index_dtype);
      Tensor on_gpu = embedding(weight.cuda(), typed.cuda());
      EXPECT_EQ(on_gpu.dtype(), dtype);
      EXPECT_TRUE(bitwise_equal(on_gpu, embedding(weight, typed))) << dtype << " " << index_dtype;
    }
  }
  // A transposed weight and indices, and no indices at all.
  Tensor weight_t = wiggly({5, 7}).t();
  Tensor indices_t = indices.t();
  EXPECT_TRUE(bitwise_equal(
      embedding(testing::same_layout_on_cuda(weight_t), testing::same_layout_on_cuda(indices_t)),
      embedding(weight_t, indices_t)));
  EXPECT_EQ(embedding(wiggly({7, 5}).cuda(), empty({0, 3}, kInt64).cuda()).sizes(),
            (Shape{0, 3, 5}));
}

TEST(EmbeddingCuda, WeightGradientEqualsTheCpusToTheBit) {
  SKIP_WITHOUT_CUDA();
  const int64_t rows = 300, dim = 48, count = 30000;
  Tensor indices = tensor(skewed_indices(count, rows), {count / 100, 100});
  for (DType dtype : {kFloat32, kFloat16, kBFloat16}) {
    Tensor weight = wiggly({rows, dim}, 0.0, dtype);
    Tensor grad = wiggly({count / 100, 100, dim}, 1.0, dtype);
    for (std::optional<int64_t> padding : {std::optional<int64_t>{}, std::optional<int64_t>{1}}) {
      for (DType index_dtype : {kInt64, kInt32}) {
        Tensor typed = indices.to(index_dtype);
        Tensor on_cpu = weight_gradient(weight, typed, grad, padding);
        Tensor on_gpu = weight_gradient(weight, typed.cuda(), grad, padding);
        EXPECT_TRUE(bitwise_equal(on_gpu, on_cpu))
            << dtype << " " << index_dtype << " padding " << padding.value_or(-1);
      }
    }
  }
}

TEST(EmbeddingCuda, WeightGradientRepeatsBitForBitAndAllocatesNothingWhenWarm) {
  SKIP_WITHOUT_CUDA();
  const int64_t rows = 1000, dim = 64, count = 50000;
  Tensor indices = tensor(skewed_indices(count, rows)).cuda();
  Tensor weight = wiggly({rows, dim}).cuda();
  Tensor grad = wiggly({count, dim}, 2.0).cuda();
  const Tensor first = weight_gradient(weight, indices, grad);
  // A second run warms the cache for a gradient allocated while `first` holds its block.
  EXPECT_TRUE(bitwise_equal(weight_gradient(weight, indices, grad), first));
  const uint64_t allocations = cuda::memory_stats(0).num_device_allocations;
  for (int run = 0; run < 3; ++run)
    EXPECT_TRUE(bitwise_equal(weight_gradient(weight, indices, grad), first)) << "run " << run;
  EXPECT_EQ(cuda::memory_stats(0).num_device_allocations, allocations);
}

TEST(EmbeddingCuda, OutOfRangeIndexIsRaisedAtTheNextSyncPoint) {
  SKIP_WITHOUT_CUDA();
  Tensor weight = ones({256, 2}).cuda().requires_grad_();
  std::vector<int64_t> values(10, 1);
  values[7] = 300;
  // The launch returns at once; the copy to the host is the first point that waits.
  Tensor out = embedding(weight, tensor(values).cuda());
  EXPECT_ERROR_CONTAINS(out.cpu(),
                        "embedding: index 300 at position 7 is out of range for an embedding "
                        "table of 256 rows");
  // Raised once: the record is armed again, and the bad row was written as zeros.
  std::vector<float> expected(20, 1.0f);
  expected[14] = expected[15] = 0.0f;
  EXPECT_EQ(to_vector<float>(out.cpu()), expected);
  // The backward skips the bad index (the host may not have seen it yet).
  out.sum().backward();
  std::vector<float> grad_row_1 = to_vector<float>(weight.grad().narrow(0, 1, 1).cpu());
  EXPECT_EQ(grad_row_1, (std::vector<float>{9, 9}));
  // Each sync point raises: device synchronize, stream synchronize, and int32 indices.
  Tensor negative = tensor(std::vector<int32_t>{0, -2}).cuda();
  (void)embedding(weight.detach(), negative);
  EXPECT_ERROR_CONTAINS(cuda::synchronize(),
                        "embedding: index -2 at position 1 is out of range for an embedding "
                        "table of 256 rows");
  (void)embedding(weight.detach(), tensor(std::vector<int64_t>{256}).cuda());
  EXPECT_ERROR_CONTAINS(cuda::current_stream(0).synchronize(),
                        "embedding: index 256 at position 0");
  EXPECT_NO_THROW(cuda::synchronize());
}

TEST(EmbeddingCuda, TheFirstReportIsKeptUntilRaised) {
  SKIP_WITHOUT_CUDA();
  Tensor weight = ones({4, 3}).cuda();
  // Two bad launches on one stream before the host looks: the first one's report stays whole.
  (void)embedding(weight, tensor(std::vector<int64_t>{0, 500}).cuda());
  (void)embedding(weight, tensor(std::vector<int64_t>{600, 1, 2}).cuda());
  EXPECT_ERROR_CONTAINS(
      sum(embedding(weight, tensor(std::vector<int64_t>{1}).cuda())).item<float>(),
      "embedding: index 500 at position 1 is out of range for an embedding "
      "table of 4 rows");
  EXPECT_NO_THROW(cuda::synchronize());
  // Armed again: the next bad index is reported.
  (void)embedding(weight, tensor(std::vector<int64_t>{7}).cuda());
  EXPECT_ERROR_CONTAINS(cuda::synchronize(), "embedding: index 7 at position 0");
}

}  // namespace
}  // namespace minidl
