// sort, argsort and topk on CUDA against the CPU: the order is a total one (Note [Sort order]
// in ops/sort_math.h), so values and indices must be identical, for every dtype, both
// directions, ties and NaNs, rows sorted in shared memory and rows long enough for the
// global-memory network (50257 and 65536, a GPT vocabulary), and the gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "minidl/ops/sort.h"
#include "minidl/ops/sort_kernels.h"
#include "sort_reference.h"
#include "test_util.h"

namespace minidl {
namespace {

const Device kGpu(kCUDA, 0);

// [rows, size] values with many ties (quarters from a small set) and a NaN every 13th element
// for floating dtypes; the CPU tensor in `dtype`.
Tensor tied_values(int64_t rows, int64_t size, DType dtype) {
  std::vector<double> values(static_cast<size_t>(rows * size));
  for (size_t i = 0; i < values.size(); ++i) {
    const bool nan_here = is_floating_point(dtype) && i % 13 == 12;
    values[i] = nan_here ? std::nan("") : static_cast<double>((i * 7 + i / 5) % 23) - 11.0;
  }
  if (dtype == kBool || dtype == kUInt8)
    for (double& v : values) v = std::isnan(v) ? 1.0 : std::fabs(v);
  return from_host(values.data(), {rows, size}, kFloat64).to(dtype);
}

void expect_same_sort(const Tensor& x, int64_t dim, bool descending) {
  auto [cpu_values, cpu_indices] = sort(x, dim, descending);
  auto [gpu_values, gpu_indices] = sort(x.cuda(), dim, descending);
  EXPECT_TRUE(testing::bitwise_equal(gpu_values, cpu_values));
  EXPECT_EQ(to_vector<int64_t>(gpu_indices), to_vector<int64_t>(cpu_indices));
}

void expect_same_topk(const Tensor& x, int64_t k, int64_t dim, bool largest) {
  auto [cpu_values, cpu_indices] = topk(x, k, dim, largest);
  auto [gpu_values, gpu_indices] = topk(x.cuda(), k, dim, largest);
  EXPECT_TRUE(testing::bitwise_equal(gpu_values, cpu_values));
  EXPECT_EQ(to_vector<int64_t>(gpu_indices), to_vector<int64_t>(cpu_indices));
}

TEST(SortCuda, MatchesTheCpuForEveryDtypeDimAndDirection) {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : {kFloat32, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor x = tied_values(9, 37, dtype);
    for (int64_t dim : {0, 1}) {
      for (bool descending : {false, true}) {
        SCOPED_TRACE("dim " + std::to_string(dim) + (descending ? " descending" : " ascending"));
        expect_same_sort(x, dim, descending);
        if (dtype != kBool) expect_same_topk(x, 5, dim, descending);
      }
    }
  }
}

TEST(SortCuda, PyTorchReferenceCases) {
  SKIP_WITHOUT_CUDA();
  for (const testing::SortReference& reference : testing::kSortReferences) {
    if (reference.dtype == std::string("float64")) continue;  // CPU-only dtype
    SCOPED_TRACE(reference.name);
    DType dtype = kFloat32;
    for (DType candidate : {kFloat32, kFloat16, kBFloat16, kInt64, kBool})
      if (dtype_name(candidate) == reference.dtype) dtype = candidate;
    const Tensor x =
        from_host(reference.input.data(), Shape(reference.shape), kFloat64).to(dtype).cuda();
    Tensor values, indices;
    if (reference.op == std::string("sort"))
      std::tie(values, indices) = sort(x, reference.dim, reference.descending);
    else
      std::tie(values, indices) = topk(x, reference.k, reference.dim, reference.descending);
    const std::vector<double> got = to_vector<double>(values);
    ASSERT_EQ(got.size(), reference.values.size());
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(reference.values[i]))
        EXPECT_TRUE(std::isnan(got[i])) << "element " << i;
      else
        EXPECT_EQ(got[i], reference.values[i]) << "element " << i;
    }
    EXPECT_EQ(to_vector<int64_t>(indices), reference.indices);
  }
}

TEST(SortCuda, RowsAtTheSharedMemoryLimitAndBeyond) {
  SKIP_WITHOUT_CUDA();
  // The largest row one block sorts in shared memory, the first that goes to global memory,
  // and an odd length that pads.
  for (int64_t size : {kSharedSortLimit, kSharedSortLimit + 1, int64_t{5000}}) {
    SCOPED_TRACE(size);
    const Tensor x = tied_values(3, size, kFloat32);
    expect_same_sort(x, 1, false);
    expect_same_topk(x, 17, 1, true);
  }
}

TEST(SortCuda, VocabularySizedRows) {
  SKIP_WITHOUT_CUDA();
  for (int64_t size : {int64_t{50257}, int64_t{65536}}) {
    for (DType dtype : {kFloat32, kBFloat16, kFloat16}) {
      SCOPED_TRACE(std::to_string(size) + " " + std::string(dtype_name(dtype)));
      const Tensor logits =
          testing::wiggly({2, size}, dtype, testing::Wiggle{.amplitude = 8.0, .step = 0.0137});
      expect_same_topk(logits, 50, -1, true);
      expect_same_sort(logits, -1, true);
    }
  }
  // Ties and NaNs in a long row, and many long rows at once.
  expect_same_sort(tied_values(4, 50257, kFloat32), 1, false);
}

TEST(SortCuda, GradientMatchesTheCpu) {
  SKIP_WITHOUT_CUDA();
  for (int64_t size : {int64_t{40}, kSharedSortLimit + 3}) {
    SCOPED_TRACE(size);
    const Tensor x_cpu = testing::wiggly({3, size}, 0.2).requires_grad_();
    const Tensor x_gpu = x_cpu.detach().cuda().requires_grad_();
    const Tensor upstream = testing::wiggly({3, 7}, 1.1);
    std::get<0>(topk(x_cpu, 7)).mul(upstream).sum().backward();
    std::get<0>(topk(x_gpu, 7)).mul(upstream.cuda()).sum().backward();
    EXPECT_TRUE(testing::bitwise_equal(x_gpu.grad(), x_cpu.grad()));
    const Tensor y_cpu = testing::wiggly({6, 5}, 0.4).requires_grad_();
    const Tensor y_gpu = y_cpu.detach().cuda().requires_grad_();
    std::get<0>(sort(y_cpu, 0, true)).mul(testing::wiggly({6, 5}, 2.0)).sum().backward();
    std::get<0>(sort(y_gpu, 0, true)).mul(testing::wiggly({6, 5}, 2.0).cuda()).sum().backward();
    EXPECT_TRUE(testing::bitwise_equal(y_gpu.grad(), y_cpu.grad()));
  }
}

}  // namespace
}  // namespace minidl
