// Mixed-dtype binary ops on CUDA against the CPU: the same promoted dtype, values and gradients
// (each in its input's dtype).
#include <gtest/gtest.h>

#include <functional>
#include <string>
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

// Integer fmod and remainder (the kernels' integer paths) and the scalar forms that promote: the
// same dtype and the same values on CUDA as on the CPU.
TEST(TypePromotionCuda, IntegerModuloAndScalarPromotionMatchTheCpu) {
  SKIP_WITHOUT_CUDA();
  const Tensor dividend = (wiggly({4, 5}, 0.4) * 40.0).to(kInt64);
  const Tensor divisor = (wiggly({5}, 1.3) * 9.0).to(kInt64);
  const Tensor nonzero_divisor = where(divisor == 0, 3, divisor);
  const std::vector<std::pair<const char*, std::function<Tensor(const Tensor&, const Tensor&)>>>
      cases = {
          {"fmod", [](const Tensor& a, const Tensor& b) { return fmod(a, b); }},
          {"remainder", [](const Tensor& a, const Tensor& b) { return remainder(a, b); }},
          {"remainder scalar", [](const Tensor& a, const Tensor&) { return remainder(a, -7); }},
          {"scalars", [](const Tensor& a, const Tensor&) { return (a + 2.0) * 0.5 - (2 - a); }},
          {"pow", [](const Tensor& a, const Tensor&) { return pow(a, 2) + pow(a.abs(), 0.5); }},
          {"clamp atan2",
           [](const Tensor& a, const Tensor& b) { return clamp(a, 0.5, 9) + atan2(a, b); }},
      };
  for (DType dtype : {kInt64, kInt32, kUInt8}) {
    const Tensor a = (dtype == kUInt8 ? dividend.abs() : dividend).to(dtype);
    const Tensor b = (dtype == kUInt8 ? nonzero_divisor.abs() : nonzero_divisor).to(dtype);
    for (const auto& [name, fn] : cases) {
      SCOPED_TRACE(std::string(name) + " " + std::string(dtype_name(dtype)));
      const Tensor cpu = fn(a, b);
      const Tensor gpu = fn(a.cuda(), b.cuda()).cpu();
      EXPECT_EQ(gpu.dtype(), cpu.dtype());
      EXPECT_TRUE(testing::all_close(gpu, cpu, 1e-6, 1e-6));
    }
  }
  // A zero integer divisor: an error on the CPU, 0 on CUDA (which would have to wait to know).
  EXPECT_ERROR_CONTAINS(fmod(dividend, 0), "fmod: ZeroDivisionError");
  EXPECT_EQ(to_vector<int64_t>(fmod(dividend.cuda(), 0).cpu()),
            std::vector<int64_t>(dividend.numel(), 0));
}

}  // namespace
}  // namespace minidl
