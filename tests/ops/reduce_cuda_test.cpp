// Reductions on CUDA against the CPU (float32 unless a test says otherwise). The shapes are
// chosen to reach every kernel path of ops/cuda/reduce.cu: warp-per-row, block-per-row, rows
// cut into splits, column tiles, columns cut into splits, and the permuted layout.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "minidl/core/cuda/device.h"
#include "minidl/core/cuda/stream.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::wiggly;

struct ReduceCase {
  Shape sizes;
  Shape dims;
  const char* path;  // the kernel path it reaches, for failure messages
};

std::vector<ReduceCase> reduce_cases() {
  return {
      {{37, 50}, {1}, "warp per row"},
      {{300, 3000}, {1}, "block per row"},
      {{2, 1000003}, {1}, "rows cut into splits"},
      {{1000003}, {0}, "one long row cut into splits"},
      {{64, 50, 40}, {1}, "column tiles"},
      {{200000, 3}, {0}, "columns cut into splits"},
      {{6, 7, 8}, {0, 2}, "permuted layout"},
      {{6, 7, 8}, {}, "all elements"},
  };
}

// Float sums over up to a million values, merged in a different order than on the CPU.
constexpr double kSumAtol = 1e-3, kSumRtol = 1e-4;

TEST(ReduceCuda, SumMeanVarMatchCpuOnEveryKernelPath) {
  SKIP_WITHOUT_CUDA();
  for (const ReduceCase& c : reduce_cases()) {
    Tensor x = wiggly(c.sizes);
    Tensor gpu = x.cuda();
    EXPECT_TRUE(all_close(sum(gpu, c.dims).cpu(), sum(x, c.dims), kSumAtol, kSumRtol)) << c.path;
    EXPECT_TRUE(all_close(mean(gpu, c.dims, true).cpu(), mean(x, c.dims, true), 1e-5, kSumRtol))
        << c.path;
    EXPECT_TRUE(all_close(var(gpu, c.dims).cpu(), var(x, c.dims), 1e-5, kSumRtol)) << c.path;
    EXPECT_TRUE(all_close(var(gpu, c.dims, 0, true).cpu(), var(x, c.dims, 0, true), 1e-5, kSumRtol))
        << c.path;
  }
}

TEST(ReduceCuda, MaxMinArgmaxMatchCpuExactly) {
  SKIP_WITHOUT_CUDA();
  for (const ReduceCase& c : reduce_cases()) {
    if (c.dims.size() != 1) continue;
    Tensor x = wiggly(c.sizes);
    Tensor gpu = x.cuda();
    const int64_t dim = c.dims[0];
    auto [gpu_max, gpu_argmax] = max(gpu, dim);
    auto [cpu_max, cpu_argmax] = max(x, dim);
    EXPECT_TRUE(all_close(gpu_max.cpu(), cpu_max, 0, 0)) << c.path;
    EXPECT_TRUE(gpu_argmax.is_cuda()) << c.path;
    EXPECT_EQ(to_vector<int64_t>(gpu_argmax), to_vector<int64_t>(cpu_argmax)) << c.path;
    auto [gpu_min, gpu_argmin] = min(gpu, dim, true);
    auto [cpu_min, cpu_argmin] = min(x, dim, true);
    EXPECT_TRUE(all_close(gpu_min.cpu(), cpu_min, 0, 0)) << c.path;
    EXPECT_EQ(gpu_argmin.sizes(), cpu_argmin.sizes()) << c.path;
    EXPECT_EQ(to_vector<int64_t>(gpu_argmin), to_vector<int64_t>(cpu_argmin)) << c.path;
    EXPECT_EQ(to_vector<int64_t>(argmax(gpu, dim)), to_vector<int64_t>(argmax(x, dim))) << c.path;
    EXPECT_EQ(max(gpu).item<float>(), max(x).item<float>()) << c.path;
    EXPECT_EQ(argmax(gpu).item<int64_t>(), argmax(x).item<int64_t>()) << c.path;
  }
}

TEST(ReduceCuda, TiesGoToTheFirstIndexAcrossThreadsAndSplits) {
  SKIP_WITHOUT_CUDA();
  Tensor flat = zeros({1000003}, TensorOptions(kFloat32).device(Device(kCUDA)));
  EXPECT_EQ(argmax(flat).item<int64_t>(), 0);
  Tensor rows = zeros({3, 5000}, TensorOptions(kFloat32).device(Device(kCUDA)));
  EXPECT_EQ(to_vector<int64_t>(argmax(rows, 1)), (std::vector<int64_t>{0, 0, 0}));
  Tensor columns = zeros({200000, 3}, TensorOptions(kFloat32).device(Device(kCUDA)));
  EXPECT_EQ(to_vector<int64_t>(argmax(columns, 0)), (std::vector<int64_t>{0, 0, 0}));
}

TEST(ReduceCuda, IntegerBoolHalfAndNaN) {
  SKIP_WITHOUT_CUDA();
  const int64_t n = 1000003;
  Tensor ints = arange(n).cuda();
  EXPECT_EQ(sum(ints).item<int64_t>(), n * (n - 1) / 2);  // exact: int64 accumulation
  Tensor flags = tensor(std::vector<bool>{true, false, true, true}).cuda();
  EXPECT_EQ(sum(flags).dtype(), kInt64);
  EXPECT_EQ(sum(flags).item<int64_t>(), 3);
  Tensor halves = ones({4096}, TensorOptions(kFloat16).device(Device(kCUDA)));
  EXPECT_EQ(sum(halves).dtype(), kFloat16);
  EXPECT_EQ(sum(halves).item<float>(), 4096.0f);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor with_nan = tensor({1.0, nan, 3.0, 4.0}).cuda();
  EXPECT_TRUE(std::isnan(max(with_nan).item<float>()));
  EXPECT_EQ(argmax(with_nan).item<int64_t>(), 1);
  EXPECT_TRUE(std::isnan(mean(zeros({0}).cuda()).item<float>()));
}

TEST(ReduceCuda, TransposedInputMatchesCpu) {
  SKIP_WITHOUT_CUDA();
  Tensor x = wiggly({40, 30});
  Tensor gpu = x.cuda().t();
  EXPECT_TRUE(all_close(sum(gpu, {0}).cpu(), sum(x.t(), {0}), 1e-4, 1e-5));
  EXPECT_TRUE(all_close(std::get<0>(max(gpu, 1)).cpu(), std::get<0>(max(x.t(), 1)), 0, 0));
  EXPECT_EQ(to_vector<int64_t>(std::get<1>(gpu.min(1))),
            to_vector<int64_t>(std::get<1>(x.t().min(1))));
}

// d sum(fn(x) * w) / dx on `device`, returned on the CPU, for a fixed weight w.
Tensor gradient_on(Device device, const Tensor& x_cpu,
                   const std::function<Tensor(const Tensor&)>& fn) {
  Tensor x = x_cpu.to(device).detach();
  x.requires_grad_();
  Tensor y = fn(x);
  y.backward(wiggly(y.sizes(), 2.0).to(device));
  return x.grad().cpu();
}

TEST(ReduceCuda, GradientsMatchCpu) {
  SKIP_WITHOUT_CUDA();
  Tensor x = wiggly({6, 7, 8});
  const std::vector<std::pair<const char*, std::function<Tensor(const Tensor&)>>> ops{
      {"sum",
       [](const Tensor& t) {
         return sum(t, {0, 2});
       }},
      {"mean", [](const Tensor& t) { return mean(t, {1}, true); }},
      {"var", [](const Tensor& t) { return var(t, Shape{2}); }},
      {"max", [](const Tensor& t) { return std::get<0>(max(t, 1)); }},
      {"min", [](const Tensor& t) { return std::get<0>(min(t, -1, true)); }},
      {"max all", [](const Tensor& t) { return max(t).reshape({1}); }},
  };
  for (const auto& [name, fn] : ops)
    EXPECT_TRUE(
        all_close(gradient_on(Device(kCUDA), x, fn), gradient_on(Device(kCPU), x, fn), 1e-5, 1e-4))
        << name;
}

TEST(ReduceCuda, MaxMinDimTiesAndTheirGradientsMatchCpu) {
  SKIP_WITHOUT_CUDA();
  // Ties in every row and column: the index, and so the gradient, goes to the first one.
  Tensor x = tensor({4, 4, 1, 0, 2, 2, 3, 3, 3}, kFloat32).view({3, 3});
  for (int64_t dim : {0, 1}) {
    auto [gpu_values, gpu_indices] = max(x.cuda(), dim);
    auto [cpu_values, cpu_indices] = max(x, dim);
    EXPECT_TRUE(all_close(gpu_values.cpu(), cpu_values, 0, 0)) << "dim " << dim;
    EXPECT_EQ(to_vector<int64_t>(gpu_indices), to_vector<int64_t>(cpu_indices)) << "dim " << dim;
    auto fn = [dim](const Tensor& t) { return std::get<0>(t.min(dim)); };
    EXPECT_TRUE(
        all_close(gradient_on(Device(kCUDA), x, fn), gradient_on(Device(kCPU), x, fn), 0, 0))
        << "dim " << dim;
  }
}

TEST(ReduceCuda, RunsOnTheCurrentStream) {
  SKIP_WITHOUT_CUDA();
  Tensor x = wiggly({300, 3000});
  Tensor gpu = x.cuda();
  cuda::Stream stream = cuda::Stream::create(cuda::current_device());
  Tensor result;
  {
    cuda::StreamGuard guard(stream);
    result = sum(gpu, {1});
  }
  stream.synchronize();
  EXPECT_TRUE(all_close(result.cpu(), sum(x, {1}), kSumAtol, kSumRtol));
}

}  // namespace
}  // namespace minidl

namespace minidl {
namespace {

TEST(ReduceCuda, DerivedReductionsMatchCpu) {
  SKIP_WITHOUT_CUDA();
  const Tensor x = testing::wiggly({3, 4, 5}, 0.2) * 4.0;
  const std::vector<std::pair<const char*, std::function<Tensor(const Tensor&)>>> ops = {
      {"logsumexp",
       [](const Tensor& t) {
         return logsumexp(t, {0, 2});
       }},
      {"amax", [](const Tensor& t) { return amax(t, {1}, true); }},
      {"amin", [](const Tensor& t) { return amin(t); }},
      {"std", [](const Tensor& t) { return std(t, {2}); }},
  };
  for (const auto& [name, fn] : ops) {
    EXPECT_TRUE(testing::all_close(fn(x.cuda()).cpu(), fn(x), 1e-5, 1e-5)) << name;
    Tensor on_gpu = x.cuda().requires_grad_(), on_cpu = x.clone().requires_grad_();
    fn(on_gpu).sum().backward();
    fn(on_cpu).sum().backward();
    EXPECT_TRUE(testing::all_close(on_gpu.grad().cpu(), on_cpu.grad(), 1e-5, 1e-5))
        << name << " backward";
  }
  const Tensor mask = x > 1.0;
  EXPECT_TRUE(testing::bitwise_equal(any(mask.cuda(), {1}).cpu(), any(mask, {1})));
  EXPECT_TRUE(testing::bitwise_equal(all(x.cuda(), {0, 2}).cpu(), all(x, {0, 2})));
}

}  // namespace
}  // namespace minidl
