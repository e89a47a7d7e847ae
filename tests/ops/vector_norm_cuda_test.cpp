// norm on CUDA against the CPU, for every order, over every dim and over one, in float32 and
// the 16-bit dtypes, with the gradient (the reductions may add in another order on the device,
// so close, not equal).
#include <gtest/gtest.h>

#include <cmath>

#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::wiggly;

TEST(VectorNormCuda, MatchesTheCpuWithTheGradient) {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : {kFloat32, kFloat16, kBFloat16}) {
    const double tolerance = dtype == kFloat32 ? 1e-5 : 2e-2;
    for (double p : {2.0, 1.0, double(INFINITY), double(-INFINITY), 0.0, 3.0, 0.5}) {
      for (const Shape& dims : {Shape{}, Shape{1}}) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " p " + std::to_string(p));
        Tensor on_cpu = wiggly({5, 70}, 0.0, dtype).requires_grad_();
        Tensor on_gpu = wiggly({5, 70}, 0.0, dtype).cuda().requires_grad_();
        Tensor out_cpu = norm(on_cpu, p, dims, true);
        Tensor out_gpu = norm(on_gpu, p, dims, true);
        EXPECT_TRUE(all_close(out_gpu.cpu(), out_cpu, tolerance, tolerance));
        out_cpu.backward(ones_like(out_cpu));
        out_gpu.backward(ones_like(out_gpu));
        EXPECT_TRUE(all_close(on_gpu.grad().cpu(), on_cpu.grad(), tolerance, tolerance));
      }
    }
  }
}

}  // namespace
}  // namespace minidl
