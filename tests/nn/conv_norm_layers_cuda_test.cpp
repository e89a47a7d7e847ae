// nn::Conv1d, nn::BatchNorm1d, nn::ConvTranspose2d, nn::GroupNorm and nn::Conv2d's padding modes
// moved to a GPU: outputs, parameter gradients and running statistics match the CPU's. Skipped,
// with the reason, where there is no GPU.
#include <gtest/gtest.h>

#include <string>

#include "minidl/nn/nn.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;

void expect_same_step(nn::Sequential& on_cpu, nn::Sequential& on_gpu, const Tensor& x) {
  on_gpu->to(Device(kCUDA));
  const Tensor cpu_out = on_cpu->forward(x), gpu_out = on_gpu->forward(x.cuda());
  EXPECT_TRUE(all_close(gpu_out.cpu(), cpu_out, 1e-4, 1e-3));
  sum(cpu_out * cpu_out).backward();
  sum(gpu_out * gpu_out).backward();
  const auto cpu_parameters = on_cpu->named_parameters();
  const auto gpu_parameters = on_gpu->named_parameters();
  for (const std::string& name : cpu_parameters.keys())
    EXPECT_TRUE(
        all_close(gpu_parameters[name].grad().cpu(), cpu_parameters[name].grad(), 1e-3, 1e-3))
        << name;
  const auto cpu_buffers = on_cpu->named_buffers(), gpu_buffers = on_gpu->named_buffers();
  for (const std::string& name : cpu_buffers.keys())
    EXPECT_TRUE(all_close(gpu_buffers[name].cpu(), cpu_buffers[name], 1e-5, 1e-4)) << name;
}

TEST(ConvNormLayersCuda, Conv1dAndBatchNorm1dMatchTheCpu) {
  SKIP_WITHOUT_CUDA();
  const auto make = [] {
    manual_seed(7);
    return nn::Sequential{nn::Conv1d(nn::Conv1dOptions(4, 8, 3).padding(1)), nn::BatchNorm1d(8),
                          nn::ReLU(), nn::Conv1d(nn::Conv1dOptions(8, 8, 3).stride(2).groups(2))};
  };
  nn::Sequential on_cpu = make(), on_gpu = make();
  expect_same_step(on_cpu, on_gpu, randn({6, 4, 20}));
}

TEST(ConvNormLayersCuda, ConvTranspose2dAndGroupNormMatchTheCpu) {
  SKIP_WITHOUT_CUDA();
  const auto make = [] {
    manual_seed(8);
    return nn::Sequential{
        nn::ConvTranspose2d(nn::ConvTranspose2dOptions(8, 6, 4).stride(2).padding(1)),
        nn::GroupNorm(3, 6), nn::ReLU(),
        nn::ConvTranspose2d(nn::ConvTranspose2dOptions(6, 3, 3).stride(2).output_padding(1))};
  };
  nn::Sequential on_cpu = make(), on_gpu = make();
  expect_same_step(on_cpu, on_gpu, randn({2, 8, 5, 5}));
}

TEST(ConvNormLayersCuda, SamePaddingInEachModeMatchesTheCpu) {
  SKIP_WITHOUT_CUDA();
  const auto make = [] {
    manual_seed(9);
    return nn::Sequential{
        nn::Conv2d(nn::Conv2dOptions(3, 4, {2, 3}).padding(kSame).padding_mode(kReflect)),
        nn::Conv2d(nn::Conv2dOptions(4, 4, 3).padding(kSame).padding_mode(kCircular)),
        nn::Conv2d(nn::Conv2dOptions(4, 2, 4).padding(kSame).dilation(2).padding_mode(kReplicate)),
        nn::Conv2d(nn::Conv2dOptions(2, 2, 2).padding(kSame))};
  };
  nn::Sequential on_cpu = make(), on_gpu = make();
  expect_same_step(on_cpu, on_gpu, randn({2, 3, 9, 10}));
}

}  // namespace
}  // namespace minidl
