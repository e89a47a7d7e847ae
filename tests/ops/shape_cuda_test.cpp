// cat, stack, index_select and one_hot on CUDA against the CPU (float32 unless a test says
// otherwise), forward and backward.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <utility>
#include <vector>

#include "minidl/ops/reduce.h"
#include "minidl/ops/shape.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::wiggly;

TEST(CatCuda, MatchesCpuForwardAndBackward) {
  SKIP_WITHOUT_CUDA();
  Tensor a = wiggly({3, 4}).requires_grad_();
  Tensor b = wiggly({5, 3}, 1.0).detach().t().requires_grad_();  // [3, 5], non-contiguous
  Tensor c = wiggly({3, 0}, 2.0).requires_grad_();
  Tensor a_gpu = a.detach().cuda().requires_grad_();
  Tensor b_gpu = b.detach().cuda().requires_grad_();
  Tensor c_gpu = c.detach().cuda().requires_grad_();
  for (int64_t dim : {1, -1}) {
    EXPECT_TRUE(all_close(cat({a_gpu, b_gpu, c_gpu}, dim).cpu(), cat({a, b, c}, dim), 0, 0));
  }
  EXPECT_TRUE(all_close(cat({a_gpu.t(), b_gpu.t()}, 0).cpu(), cat({a.t(), b.t()}, 0), 0, 0));
  Tensor out = cat({a, b, c}, 1);
  Tensor grad = wiggly(out.sizes(), 3.0);
  out.backward(grad);
  cat({a_gpu, b_gpu, c_gpu}, 1).backward(grad.cuda());
  EXPECT_TRUE(all_close(a_gpu.grad().cpu(), a.grad(), 0, 0));
  EXPECT_TRUE(all_close(b_gpu.grad().cpu(), b.grad(), 0, 0));
}

TEST(StackCuda, MatchesCpu) {
  SKIP_WITHOUT_CUDA();
  Tensor a = wiggly({2, 3}), b = wiggly({2, 3}, 1.0);
  for (int64_t dim : {0, 1, 2})
    EXPECT_TRUE(all_close(stack({a.cuda(), b.cuda()}, dim).cpu(), stack({a, b}, dim), 0, 0));
}

TEST(IndexSelectCuda, MatchesCpuForDimsAndDtypes) {
  SKIP_WITHOUT_CUDA();
  Tensor x = wiggly({4, 5, 6});
  Tensor index = tensor(std::vector<int64_t>{3, 0, 3, 1});
  for (int64_t dim : {0, 1, 2})
    EXPECT_TRUE(all_close(index_select(x.cuda(), dim, index.cuda()).cpu(),
                          index_select(x, dim, index), 0, 0))
        << "dim " << dim;
  Tensor transposed = x.transpose(0, 2);
  EXPECT_TRUE(all_close(index_select(transposed.cuda(), 1, index.cuda()).cpu(),
                        index_select(transposed, 1, index), 0, 0));
  for (DType dtype : {kFloat16, kBFloat16, kInt64, kUInt8}) {
    Tensor typed = arange(120, kFloat32).view({4, 5, 6}).to(dtype);
    EXPECT_TRUE(all_close(index_select(typed.cuda(), 1, index.cuda()).cpu(),
                          index_select(typed, 1, index), 0, 0))
        << dtype;
  }
}

TEST(IndexSelectCuda, GradientMatchesCpuWithRepeatedIndices) {
  SKIP_WITHOUT_CUDA();
  Tensor index = tensor(std::vector<int64_t>{2, 0, 2, 2, 1});
  for (int64_t dim : {0, 1}) {
    Tensor x = wiggly({3, 3, 4}).requires_grad_();
    Tensor x_gpu = x.detach().cuda().requires_grad_();
    Tensor out = index_select(x, dim, index);
    Tensor grad = wiggly(out.sizes(), 1.0);
    out.backward(grad);
    index_select(x_gpu, dim, index.cuda()).backward(grad.cuda());
    // atomicAdd adds the repeats in any order: equal up to float rounding.
    EXPECT_TRUE(all_close(x_gpu.grad().cpu(), x.grad(), 1e-6, 1e-6)) << "dim " << dim;
  }
}

TEST(OneHotCuda, MatchesCpu) {
  SKIP_WITHOUT_CUDA();
  Tensor labels = tensor(std::vector<int64_t>{3, 0, 1, 3, 2, 0}).view({2, 3});
  EXPECT_TRUE(all_close(one_hot(labels.cuda(), 5).cpu(), one_hot(labels, 5), 0, 0));
  Tensor inferred = one_hot(labels.cuda());  // reads the largest label on the host
  EXPECT_EQ(inferred.sizes(), (Shape{2, 3, 4}));
  EXPECT_TRUE(all_close(inferred.cpu(), one_hot(labels), 0, 0));
}

TEST(IndexSelectCuda, IndexOnAnotherDeviceIsAnError) {
  SKIP_WITHOUT_CUDA();
  EXPECT_ERROR_CONTAINS(index_select(zeros({3}).cuda(), 0, tensor(std::vector<int64_t>{0})),
                        "index_select: expected the index on the input's device cuda:0, got cpu");
}

}  // namespace
}  // namespace minidl

namespace minidl {
namespace {

TEST(RearrangeCuda, FlipRollRepeatAndPadMatchTheCpu) {
  SKIP_WITHOUT_CUDA();
  const Tensor x = testing::wiggly({2, 3, 5}, 0.4);
  const std::vector<std::pair<const char*, std::function<Tensor(const Tensor&)>>> ops = {
      {"flip",
       [](const Tensor& t) {
         return flip(t, {0, 2});
       }},
      {"roll",
       [](const Tensor& t) {
         return roll(t, {2, -1}, {2, 1});
       }},
      {"repeat",
       [](const Tensor& t) {
         return repeat(t, {2, 1, 1, 3});
       }},
      {"repeat_interleave", [](const Tensor& t) { return repeat_interleave(t, 2, 1); }},
      {"pad constant",
       [](const Tensor& t) {
         return pad(t, {1, 2, 0, 1}, PadMode::Constant, 3);
       }},
      {"pad reflect",
       [](const Tensor& t) {
         return pad(t, {2, 2, 1, 1}, PadMode::Reflect);
       }},
  };
  for (const auto& [name, fn] : ops) {
    EXPECT_TRUE(testing::bitwise_equal(fn(x.cuda()).cpu(), fn(x))) << name;
    Tensor on_gpu = x.cuda().requires_grad_(), on_cpu = x.clone().requires_grad_();
    fn(on_gpu).sum().backward();
    fn(on_cpu).sum().backward();
    EXPECT_TRUE(testing::all_close(on_gpu.grad().cpu(), on_cpu.grad(), 1e-6, 1e-6))
        << name << " backward";
  }
}

}  // namespace
}  // namespace minidl
