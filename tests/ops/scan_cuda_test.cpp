// cumsum, cumprod and prod on CUDA against the CPU: both backends scan each line serially in
// one order and type (ops/scan_math.h), so the forward results are equal to the bit, in every
// dtype, for lines along the first, middle and last dims; the backward (whose sums may contract
// into FMAs on the device) is close, with zeros in the input.
#include <gtest/gtest.h>

#include <vector>

#include "minidl/ops/scan.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::bitwise_equal;
using testing::wiggly;

// wiggly values near 1 (so long products stay finite) with a zero every 7th element.
Tensor near_one_with_zeros(const Shape& sizes, DType dtype) {
  Tensor x = wiggly(sizes, kFloat32, testing::Wiggle{.amplitude = 0.3, .offset = 1.0});
  Tensor flat = x.reshape({-1});
  for (int64_t i = 6; i < flat.numel(); i += 7) flat.narrow(0, i, 1).fill_(0);
  return x.to(dtype);
}

TEST(ScanCuda, ForwardEqualsTheCpusToTheBit) {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : {kFloat32, kFloat16, kBFloat16, kInt64}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor x = near_one_with_zeros({5, 37, 6}, dtype);
    for (int64_t dim : {0, 1, 2}) {
      SCOPED_TRACE(dim);
      EXPECT_TRUE(bitwise_equal(cumsum(x.cuda(), dim).cpu(), cumsum(x, dim)));
      EXPECT_TRUE(bitwise_equal(cumprod(x.cuda(), dim).cpu(), cumprod(x, dim)));
      EXPECT_TRUE(bitwise_equal(prod(x.cuda(), dim, true).cpu(), prod(x, dim, true)));
    }
    EXPECT_TRUE(bitwise_equal(prod(x.cuda()).cpu(), prod(x)));
  }
  // A long line, and a strided input.
  const Tensor long_line = wiggly({3, 5000}, 0.0, kFloat32);
  EXPECT_TRUE(bitwise_equal(cumsum(long_line.cuda(), 1).cpu(), cumsum(long_line, 1)));
  const Tensor strided = wiggly({6, 8}, 0.0, kFloat32).t();
  EXPECT_TRUE(bitwise_equal(cumsum(strided.cuda(), 1).cpu(), cumsum(strided, 1)));
}

TEST(ScanCuda, GradientsMatchTheCpusWithZeros) {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : {kFloat32, kFloat16, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const double tolerance = dtype == kFloat32 ? 1e-5 : 2e-2;
    const Tensor x = near_one_with_zeros({4, 9, 5}, dtype);
    const Tensor upstream = wiggly({4, 9, 5}, 1.0, dtype);
    for (int64_t dim : {0, 1, 2}) {
      SCOPED_TRACE(dim);
      for (bool product : {false, true}) {
        Tensor on_cpu = x.detach().requires_grad_();
        Tensor on_gpu = x.cuda().requires_grad_();
        (product ? cumprod(on_cpu, dim) : cumsum(on_cpu, dim)).backward(upstream);
        (product ? cumprod(on_gpu, dim) : cumsum(on_gpu, dim)).backward(upstream.cuda());
        EXPECT_TRUE(all_close(on_gpu.grad().cpu(), on_cpu.grad(), tolerance, tolerance));
      }
    }
  }
}

}  // namespace
}  // namespace minidl
