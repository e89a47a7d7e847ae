// Modules on a CUDA device: Module::to moves everything in place, outputs match the CPU, and
// checkpoints cross devices. Skipped, with the reason, where there is no GPU.
#include <unistd.h>

#include <filesystem>
#include <string>

#include "minidl/models/models.h"
#include "minidl/nn/nn.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "test_modules.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::ConvNet;

TEST(ModuleCuda, ToMovesParametersBuffersAndGradientsInPlace) {
  SKIP_WITHOUT_CUDA();
  ConvNet net;
  sum(net(randn({2, 2, 5, 5}))).backward();  // gradients exist before the move
  const Tensor weight_alias = net->conv->weight;
  net->to(Device(kCUDA));
  EXPECT_TRUE(weight_alias.is_cuda());
  for (const Tensor& parameter : net->parameters()) {
    EXPECT_TRUE(parameter.is_cuda());
    EXPECT_TRUE(parameter.is_leaf());
    EXPECT_TRUE(parameter.requires_grad());
    ASSERT_TRUE(parameter.grad().defined());
    EXPECT_TRUE(parameter.grad().is_cuda());
  }
  for (const Tensor& buffer : net->buffers()) EXPECT_TRUE(buffer.is_cuda());
  EXPECT_EQ(net->bn->num_batches_tracked.dtype(), kInt64);
}

TEST(ModuleCuda, OutputsAndGradientsMatchTheCpu) {
  SKIP_WITHOUT_CUDA();
  manual_seed(3);
  models::LeNet on_cpu;
  manual_seed(3);
  models::LeNet on_gpu;
  on_gpu->to(Device(kCUDA));
  Tensor x = randn({4, 1, 28, 28});
  Tensor cpu_out = on_cpu(x), gpu_out = on_gpu(x.to(Device(kCUDA)));
  EXPECT_TRUE(gpu_out.is_cuda());
  EXPECT_TRUE(::minidl::testing::all_close(gpu_out.cpu(), cpu_out, 1e-4, 1e-3));
  sum(cpu_out).backward();
  sum(gpu_out).backward();
  EXPECT_TRUE(::minidl::testing::all_close(on_gpu->fc1->weight.grad().cpu(),
                                           on_cpu->fc1->weight.grad(), 1e-4, 1e-3));
}

TEST(ModuleCuda, LayerNormInASequentialMatchesTheCpu) {
  SKIP_WITHOUT_CUDA();
  const auto make = [] {
    manual_seed(5);
    return nn::Sequential{nn::Linear(8, 48), nn::LayerNorm(nn::LayerNormOptions({48})), nn::ReLU(),
                          nn::Linear(48, 4)};
  };
  nn::Sequential on_cpu = make(), on_gpu = make();
  on_gpu->to(Device(kCUDA));
  const Tensor x = randn({16, 8});
  const Tensor cpu_out = on_cpu->forward(x), gpu_out = on_gpu->forward(x.to(Device(kCUDA)));
  EXPECT_TRUE(::minidl::testing::all_close(gpu_out.cpu(), cpu_out, 1e-4, 1e-3));
  sum(cpu_out).backward();
  sum(gpu_out).backward();
  const auto cpu_parameters = on_cpu->named_parameters(),
             gpu_parameters = on_gpu->named_parameters();
  for (const char* name : {"1.weight", "1.bias", "0.weight"})
    EXPECT_TRUE(::minidl::testing::all_close(gpu_parameters[name].grad().cpu(),
                                             cpu_parameters[name].grad(), 1e-4, 1e-3))
        << name;
}

TEST(ModuleCuda, CheckpointsCrossDevices) {
  SKIP_WITHOUT_CUDA();
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("minidl_cuda_checkpoint_" + std::to_string(::getpid()) + ".safetensors");
  ConvNet on_gpu;
  on_gpu->to(Device(kCUDA));
  on_gpu(randn({3, 2, 5, 5}).to(Device(kCUDA)));  // moves the running statistics
  nn::save(on_gpu, path);

  ConvNet on_cpu;
  nn::load(on_cpu, path);
  ConvNet back_on_gpu;
  back_on_gpu->to(Device(kCUDA));
  nn::load(back_on_gpu, path);
  std::filesystem::remove(path);

  for (const auto& item : on_gpu->state_dict()) {
    const Tensor cpu_tensor = on_cpu->state_dict()[item.key()];
    const Tensor gpu_tensor = back_on_gpu->state_dict()[item.key()];
    EXPECT_TRUE(cpu_tensor.is_cpu()) << item.key();
    EXPECT_TRUE(gpu_tensor.is_cuda()) << item.key();
    EXPECT_EQ(to_vector<double>(cpu_tensor), to_vector<double>(item.value())) << item.key();
    EXPECT_EQ(to_vector<double>(gpu_tensor), to_vector<double>(item.value())) << item.key();
  }
}

}  // namespace
}  // namespace minidl
