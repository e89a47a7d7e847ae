// matmul and linear on CUDA against the CPU (float32 unless a test says otherwise): layouts,
// broadcast batches, 16-bit types, TF32, gradients, and a non-default stream.
#include <gtest/gtest.h>

#include <cmath>

#include "minidl/core/cuda/stream.h"
#include "minidl/ops/linalg.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::same_layout_on_cuda;
using testing::wiggly;

// Pairs of CPU operands covering the layouts and batch shapes matmul handles differently.
std::vector<std::pair<Tensor, Tensor>> operand_cases() {
  return {
      {wiggly({5, 4}), wiggly({4, 3}, 1.0)},
      {wiggly({4, 5}).t(), wiggly({3, 4}, 1.0).t()},                            // both transposed
      {wiggly({5, 8}).slice(1, 0, 8, 2), wiggly({4, 7}, 1.0).narrow(1, 2, 3)},  // strided
      {wiggly({3, 4, 5}), wiggly({3, 5, 2}, 1.0)},                              // batched
      {wiggly({3, 4, 5}), wiggly({5, 2}, 1.0)},                  // shared b, folded batch
      {wiggly({3, 5, 4}).transpose(1, 2), wiggly({5, 2}, 1.0)},  // shared b, per-batch transpose
      {wiggly({4, 5}), wiggly({3, 5, 2}, 1.0)},                  // shared a
      {wiggly({1, 4, 5}), wiggly({3, 5, 2}, 1.0)},               // batch of one
      {wiggly({5}), wiggly({2, 5, 3}, 1.0)},                     // vector first
      {wiggly({2, 3, 5}), wiggly({5}, 1.0)},                     // vector second
      {wiggly({64, 48}), wiggly({48, 80}, 1.0)},                 // a larger product
      {wiggly({2, 3, 4, 5}), wiggly({2, 3, 5, 2}, 1.0)},         // 4-D batches
      {wiggly({2, 1, 4, 5}), wiggly({3, 5, 2}, 1.0)},            // 4-D, broadcast batches
      {wiggly({2, 3, 4, 5}), wiggly({2, 3, 6, 5}, 1.0).transpose(-2, -1)},  // q @ k^T
  };
}

TEST(MatmulCuda, MatchesCpuAcrossLayoutsAndBatches) {
  SKIP_WITHOUT_CUDA();
  ASSERT_FALSE(allow_tf32());
  for (const auto& [a, b] : operand_cases()) {
    Tensor out = matmul(same_layout_on_cuda(a), same_layout_on_cuda(b));
    EXPECT_TRUE(out.is_cuda());
    EXPECT_TRUE(all_close(out.cpu(), matmul(a, b), 1e-5, 1e-4))
        << shape_str(a.sizes()) << " @ " << shape_str(b.sizes());
  }
}

TEST(MatmulCuda, HalfAndBFloat16AccumulateInFloat) {
  SKIP_WITHOUT_CUDA();
  Tensor a = wiggly({4, 32, 64}), b = wiggly({64, 16}, 1.0);
  for (DType dtype : {kFloat16, kBFloat16}) {
    Tensor a16 = a.to(dtype), b16 = b.to(dtype);
    Tensor out = matmul(a16.cuda(), b16.cuda());
    EXPECT_EQ(out.dtype(), dtype);
    // The CPU converts the same 16-bit inputs to float32 and multiplies exactly in float32.
    const double tolerance = dtype == kFloat16 ? 2e-3 : 1e-2;
    EXPECT_TRUE(all_close(out.cpu(), matmul(a16, b16), tolerance, tolerance)) << dtype;
  }
}

TEST(MatmulCuda, Tf32OnlyWhenAllowed) {
  SKIP_WITHOUT_CUDA();
  Tensor a = wiggly({128, 256}), b = wiggly({256, 64}, 1.0);
  Tensor expected = matmul(a, b);
  set_allow_tf32(true);
  Tensor relaxed = matmul(a.cuda(), b.cuda()).cpu();
  set_allow_tf32(false);
  // TF32 keeps 10 mantissa bits of each input: close, to about 1e-3 relative per product.
  EXPECT_TRUE(all_close(relaxed, expected, 5e-2, 1e-2));
  EXPECT_TRUE(all_close(matmul(a.cuda(), b.cuda()).cpu(), expected, 1e-4, 1e-4));
}

TEST(MatmulCuda, GradientsMatchCpu) {
  SKIP_WITHOUT_CUDA();
  for (const auto& [a, b] : operand_cases()) {
    Tensor a_cpu = a.detach().requires_grad_(), b_cpu = b.detach().requires_grad_();
    Tensor a_gpu = same_layout_on_cuda(a).requires_grad_();
    Tensor b_gpu = same_layout_on_cuda(b).requires_grad_();
    Tensor out = matmul(a_cpu, b_cpu);
    Tensor grad = wiggly(out.sizes(), 3.0);
    out.backward(grad);
    matmul(a_gpu, b_gpu).backward(grad.cuda());
    EXPECT_TRUE(all_close(a_gpu.grad().cpu(), a_cpu.grad(), 1e-5, 1e-4))
        << shape_str(a.sizes()) << " @ " << shape_str(b.sizes());
    EXPECT_TRUE(all_close(b_gpu.grad().cpu(), b_cpu.grad(), 1e-5, 1e-4))
        << shape_str(a.sizes()) << " @ " << shape_str(b.sizes());
  }
}

TEST(LinearCuda, MatchesCpuForwardAndBackward) {
  SKIP_WITHOUT_CUDA();
  Tensor x = wiggly({2, 6, 12}).requires_grad_();
  Tensor weight = wiggly({10, 12}, 1.0).requires_grad_();
  Tensor bias = wiggly({10}, 2.0).requires_grad_();
  Tensor x_gpu = x.detach().cuda().requires_grad_();
  Tensor weight_gpu = weight.detach().cuda().requires_grad_();
  Tensor bias_gpu = bias.detach().cuda().requires_grad_();
  Tensor out = linear(x, weight, bias), out_gpu = linear(x_gpu, weight_gpu, bias_gpu);
  EXPECT_TRUE(all_close(out_gpu.cpu(), out, 1e-5, 1e-4));
  Tensor grad = wiggly(out.sizes(), 3.0);
  out.backward(grad);
  out_gpu.backward(grad.cuda());
  EXPECT_TRUE(all_close(x_gpu.grad().cpu(), x.grad(), 1e-5, 1e-4));
  EXPECT_TRUE(all_close(weight_gpu.grad().cpu(), weight.grad(), 1e-5, 1e-4));
  EXPECT_TRUE(all_close(bias_gpu.grad().cpu(), bias.grad(), 1e-5, 1e-4));
  // Without a bias, and in 16-bit types.
  EXPECT_TRUE(all_close(linear(x_gpu.detach(), weight_gpu.detach()).cpu(),
                        linear(x.detach(), weight.detach()), 1e-5, 1e-4));
  for (DType dtype : {kFloat16, kBFloat16}) {
    Tensor x16 = x.detach().to(dtype), weight16 = weight.detach().to(dtype);
    Tensor bias16 = bias.detach().to(dtype);
    Tensor out16 = linear(x16.cuda(), weight16.cuda(), bias16.cuda());
    EXPECT_EQ(out16.dtype(), dtype);
    // The CPU converts the same 16-bit inputs to float32 and computes exactly in float32.
    const double tolerance = dtype == kFloat16 ? 2e-3 : 1e-2;
    EXPECT_TRUE(all_close(out16.cpu(), linear(x16, weight16, bias16), tolerance, tolerance))
        << dtype;
  }
}

TEST(MatmulCuda, RunsOnTheCurrentStream) {
  SKIP_WITHOUT_CUDA();
  Tensor a = wiggly({3, 16, 8}), b = wiggly({8, 4}, 1.0);
  Tensor a_gpu = a.cuda(), b_gpu = b.cuda();
  cuda::current_stream().synchronize();  // the inputs are ready before another stream reads them
  cuda::Stream side = cuda::Stream::create(a_gpu.device().index);
  Tensor out;
  {
    cuda::StreamGuard on_side(side);
    out = matmul(a_gpu, b_gpu);  // the handle is rebound to `side`, with its own workspace
    side.synchronize();
  }
  EXPECT_TRUE(all_close(out.cpu(), matmul(a, b), 1e-5, 1e-4));
  // Back on the default stream, the handle follows.
  EXPECT_TRUE(all_close(matmul(a_gpu, b_gpu).cpu(), matmul(a, b), 1e-5, 1e-4));
}

TEST(MatmulCuda, MixedDevicesAreAnError) {
  SKIP_WITHOUT_CUDA();
  EXPECT_ERROR_CONTAINS(matmul(zeros({2, 3}).cuda(), zeros({3, 2})),
                        "matmul: expected operands on the same device, got cuda:0 and cpu");
  EXPECT_ERROR_CONTAINS(linear(zeros({2, 3}).cuda(), zeros({4, 3})),
                        "linear: expected input, weight and bias of one dtype and device");
}

}  // namespace
}  // namespace minidl
