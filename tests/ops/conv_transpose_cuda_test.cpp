// conv_transpose2d and conv1d on CUDA (cuDNN, through conv2d's kernels) against the CPU: output
// and the gradients of input, weight and bias over strides, padding, output_padding (also above
// the stride, under dilation), dilation and groups, in NCHW and channels-last, float32 and
// 16-bit; and the device errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "minidl/ops/conv1d.h"
#include "minidl/ops/conv_transpose.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;

struct TransposedCase {
  Shape input, weight;
  Size2 stride, padding, output_padding;
  int64_t groups;
  Size2 dilation;
  const char* what;
};

std::vector<TransposedCase> transposed_cases() {
  return {
      {{2, 3, 5, 6}, {3, 4, 3, 3}, 1, 0, 0, 1, 1, "stride 1"},
      {{2, 8, 7, 5},
       {8, 3, 3, 3},
       2,
       1,
       1,
       2,
       1,
       "stride 2, padding 1, output_padding 1, groups 2"},
      {{1, 4, 6, 6},
       {4, 2, 2, 3},
       {2, 1},
       {0, 1},
       {1, 1},
       1,
       {1, 2},
       "output_padding above a stride of 1 under dilation 2"},
      {{3, 16, 4, 4}, {16, 8, 4, 4}, 2, 1, 0, 1, 1, "a DCGAN upsampling layer"},
  };
}

struct Results {
  Tensor y, grad_input, grad_weight, grad_bias;  // on the CPU
};

Results run(const TransposedCase& c, Device device, DType dtype, bool channels_last) {
  Tensor x = testing::wiggly(c.input, 0.0, kFloat32).to(dtype).to(device);
  if (channels_last) x = x.contiguous(MemoryFormat::ChannelsLast);
  x.requires_grad_();
  const Tensor w = testing::wiggly(c.weight, 1.0, kFloat32).to(dtype).to(device).requires_grad_();
  const Tensor b = testing::wiggly({c.weight[1] * c.groups}, 2.0, kFloat32)
                       .to(dtype)
                       .to(device)
                       .requires_grad_();
  const Tensor y =
      conv_transpose2d(x, w, b, c.stride, c.padding, c.output_padding, c.groups, c.dilation);
  EXPECT_EQ(y.is_contiguous(MemoryFormat::ChannelsLast) && !y.is_contiguous(), channels_last)
      << c.what;
  y.backward(testing::wiggly(y.sizes(), 3.0, kFloat32).to(dtype).to(device));
  return {y.cpu(), x.grad().cpu(), w.grad().cpu(), b.grad().cpu()};
}

TEST(ConvTranspose2dCuda, MatchesTheCpuInBothLayouts) {
  SKIP_WITHOUT_CUDA();
  for (const TransposedCase& c : transposed_cases()) {
    for (bool channels_last : {false, true}) {
      const std::string what = std::string(c.what) + (channels_last ? ", channels-last" : "");
      const Results cpu = run(c, Device(kCPU), kFloat32, channels_last);
      const Results gpu = run(c, Device(kCUDA), kFloat32, channels_last);
      EXPECT_TRUE(all_close(gpu.y, cpu.y, 1e-4, 1e-4)) << what;
      EXPECT_TRUE(all_close(gpu.grad_input, cpu.grad_input, 1e-4, 1e-4)) << what;
      EXPECT_TRUE(all_close(gpu.grad_weight, cpu.grad_weight, 1e-3, 1e-4)) << what;
      EXPECT_TRUE(all_close(gpu.grad_bias, cpu.grad_bias, 1e-3, 1e-4)) << what;
    }
  }
}

TEST(ConvTranspose2dCuda, SixteenBitMatchesTheCpu) {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : {kFloat16, kBFloat16}) {
    for (const TransposedCase& c : transposed_cases()) {
      const std::string what = std::string(c.what) + ", " + std::string(dtype_name(dtype));
      const Results cpu = run(c, Device(kCPU), dtype, false);
      const Results gpu = run(c, Device(kCUDA), dtype, false);
      EXPECT_EQ(gpu.y.dtype(), dtype) << what;
      EXPECT_TRUE(all_close(gpu.y, cpu.y, 5e-2, 2e-2)) << what;
      EXPECT_TRUE(all_close(gpu.grad_input, cpu.grad_input, 5e-2, 2e-2)) << what;
      EXPECT_TRUE(all_close(gpu.grad_weight, cpu.grad_weight, 2e-1, 2e-2)) << what;
    }
  }
}

TEST(Conv1dCuda, MatchesTheCpu) {
  SKIP_WITHOUT_CUDA();
  auto run1d = [](Device device) {
    const Tensor x = testing::wiggly({2, 4, 17}, 0.0, kFloat32).to(device).requires_grad_();
    const Tensor w = testing::wiggly({6, 2, 3}, 1.0, kFloat32).to(device).requires_grad_();
    const Tensor b = testing::wiggly({6}, 2.0, kFloat32).to(device).requires_grad_();
    const Tensor y = conv1d(x, w, b, 2, 1, 2, 2);
    y.backward(testing::wiggly(y.sizes(), 3.0, kFloat32).to(device));
    return Results{y.cpu(), x.grad().cpu(), w.grad().cpu(), b.grad().cpu()};
  };
  const Results cpu = run1d(Device(kCPU)), gpu = run1d(Device(kCUDA));
  EXPECT_TRUE(all_close(gpu.y, cpu.y, 1e-4, 1e-4));
  EXPECT_TRUE(all_close(gpu.grad_input, cpu.grad_input, 1e-4, 1e-4));
  EXPECT_TRUE(all_close(gpu.grad_weight, cpu.grad_weight, 1e-3, 1e-4));
  EXPECT_TRUE(all_close(gpu.grad_bias, cpu.grad_bias, 1e-3, 1e-4));
}

TEST(ConvTranspose2dCuda, OperandsOnAnotherDeviceAreErrors) {
  SKIP_WITHOUT_CUDA();
  const Tensor x = zeros({1, 2, 3, 3}).cuda();
  EXPECT_ERROR_CONTAINS(conv_transpose2d(x, zeros({2, 2, 2, 2})),
                        "conv_transpose2d: expected input, weight and bias on one device, got "
                        "input on cuda:0 and weight on cpu");
  EXPECT_ERROR_CONTAINS(conv_transpose2d(x, zeros({2, 2, 2, 2}).cuda(), zeros({2})),
                        "got input on cuda:0 and bias on cpu");
}

}  // namespace
}  // namespace minidl
