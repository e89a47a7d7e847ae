// Mixed-dtype binary ops on CUDA against the CPU: the same promoted dtype, values and gradients
// (each in its input's dtype).
#include <gtest/gtest.h>

#include <functional>
#include <utility>
#include <vector>

#include "minidl/ops/elementwise.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::wiggly;

struct MixedRun {
  Tensor out, grad_half, grad_single;
};

// fn(h, f, i) with h float16 and f float32 leaves and i an int32 tensor, on `device`; the
// result and both gradients, on the CPU.
MixedRun run_on(Device device,
                const std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>& fn) {
  Tensor h = wiggly({3, 4}, 0.2, kFloat16).to(device).requires_grad_();
  Tensor f = wiggly({4}, 0.9).to(device).requires_grad_();
  const Tensor i = (wiggly({3, 1}, 1.7) * 4.0).to(kInt32).to(device);
  Tensor out = fn(h, f, i);
  out.to(kFloat32).sum().backward();
  return {out.cpu(), h.grad().cpu(), f.grad().cpu()};
}

TEST(TypePromotionCuda, MixedDtypeOpsMatchTheCpu) {
  SKIP_WITHOUT_CUDA();
  const std::vector<
      std::pair<const char*, std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>>>
      cases = {
          {"add", [](const Tensor& h, const Tensor& f, const Tensor& i) { return h + f + i; }},
          {"mul div",
           [](const Tensor& h, const Tensor& f, const Tensor& i) { return h * i / (f + 3.0); }},
          {"maximum minimum", [](const Tensor& h, const Tensor& f,
                                 const Tensor& i) { return maximum(h, i) - minimum(f, h); }},
          {"where", [](const Tensor& h, const Tensor& f,
                       const Tensor& i) { return where(i > 0.5, h, f) + where(h < 0.0, i, 0.25); }},
      };
  for (const auto& [name, fn] : cases) {
    SCOPED_TRACE(name);
    const MixedRun cpu = run_on(Device(kCPU), fn);
    const MixedRun gpu = run_on(Device(kCUDA), fn);
    EXPECT_EQ(gpu.out.dtype(), cpu.out.dtype());
    EXPECT_EQ(gpu.grad_half.dtype(), kFloat16);
    EXPECT_EQ(gpu.grad_single.dtype(), kFloat32);
    EXPECT_TRUE(testing::all_close(gpu.out, cpu.out, 1e-5, 1e-5));
    EXPECT_TRUE(testing::all_close(gpu.grad_half, cpu.grad_half, 1e-3, 1e-3));
    EXPECT_TRUE(testing::all_close(gpu.grad_single, cpu.grad_single, 1e-5, 1e-5));
  }
  EXPECT_ERROR_CONTAINS(add(ones({2}), ones({2}, kInt64).cuda()),
                        "add: expected both operands on the same device, got cpu and cuda:0");
}

}  // namespace
}  // namespace minidl
