// masked_fill, tril and triu on CUDA against the CPU, forward and backward.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <utility>
#include <vector>

#include "minidl/ops/elementwise.h"
#include "minidl/ops/masking.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::wiggly;

// x.grad of sum(fn(x) * w) for a fixed w, on `device`, returned on the CPU.
Tensor gradient_on(Device device, const Tensor& x_cpu,
                   const std::function<Tensor(const Tensor&)>& fn) {
  Tensor x = x_cpu.to(device).detach().requires_grad_();
  Tensor y = fn(x);
  (y * wiggly(y.sizes(), 2.0).to(device)).sum().backward();
  return x.grad().cpu();
}

TEST(MaskingCuda, MaskedFillTrilAndTriuMatchTheCpu) {
  SKIP_WITHOUT_CUDA();
  const Tensor x = wiggly({2, 3, 5, 4});
  const Tensor mask_cpu = wiggly({5, 1}, 0.7) > 0.0;
  const Tensor mask_gpu = mask_cpu.cuda();
  const std::vector<std::pair<const char*, std::function<Tensor(const Tensor&)>>> ops = {
      {"masked_fill",
       [&](const Tensor& t) { return t.masked_fill(t.is_cuda() ? mask_gpu : mask_cpu, -1e9); }},
      {"tril", [](const Tensor& t) { return t.tril(); }},
      {"tril(-1)", [](const Tensor& t) { return tril(t, -1); }},
      {"triu(2)", [](const Tensor& t) { return triu(t, 2); }},
  };
  for (const auto& [name, fn] : ops) {
    EXPECT_TRUE(testing::bitwise_equal(fn(x.cuda()).cpu(), fn(x))) << name;
    EXPECT_TRUE(
        testing::bitwise_equal(gradient_on(Device(kCUDA), x, fn), gradient_on(Device(kCPU), x, fn)))
        << name << " backward";
  }
  // The causal mask of attention, as nanoGPT builds it, in bfloat16.
  Tensor scores = wiggly({1, 2, 4, 4}).to(kBFloat16);
  Tensor causal = tril(ones({4, 4}));
  EXPECT_TRUE(testing::bitwise_equal(scores.cuda().masked_fill(causal.cuda() == 0, -INFINITY).cpu(),
                                     scores.masked_fill(causal == 0, -INFINITY)));
}

}  // namespace
}  // namespace minidl
