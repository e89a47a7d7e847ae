// TokenWindowDataset through a DataLoader with a CUDA target: the same windows as on the CPU
// (copied from pinned batches by workers, or gathered from a device-resident dataset), and
// split_token_windows on the device equal to the CPU's.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "minidl/data/dataloader.h"
#include "minidl/data/datasets/token_window_dataset.h"
#include "test_util.h"

namespace minidl::data {
namespace {

std::vector<uint16_t> varied_tokens(size_t count) {
  std::vector<uint16_t> tokens(count);
  for (size_t i = 0; i < count; ++i) tokens[i] = static_cast<uint16_t>((i * 7919u) % 50257u);
  return tokens;
}

std::vector<Batch> one_pass(DataLoader& loader, int64_t epoch) {
  loader.set_epoch(epoch);
  std::vector<Batch> batches;
  for (Batch& batch : loader) batches.push_back(batch);
  return batches;
}

void expect_same_windows(const std::vector<Batch>& on_gpu, const std::vector<Batch>& on_cpu) {
  ASSERT_EQ(on_gpu.size(), on_cpu.size());
  for (size_t k = 0; k < on_cpu.size(); ++k) {
    SCOPED_TRACE(::testing::Message() << "batch " << k);
    ASSERT_TRUE(on_gpu[k].images.is_cuda());
    EXPECT_TRUE(testing::bitwise_equal(on_gpu[k].images.to(Device(kCPU)), on_cpu[k].images));
    EXPECT_TRUE(testing::bitwise_equal(on_gpu[k].indices.to(Device(kCPU)), on_cpu[k].indices));
    const TokenWindowBatch gpu_xy = split_token_windows(on_gpu[k].images);
    const TokenWindowBatch cpu_xy = split_token_windows(on_cpu[k].images);
    EXPECT_TRUE(gpu_xy.inputs.is_cuda());
    EXPECT_TRUE(gpu_xy.targets.is_contiguous());
    EXPECT_TRUE(testing::bitwise_equal(gpu_xy.inputs.to(Device(kCPU)), cpu_xy.inputs));
    EXPECT_TRUE(testing::bitwise_equal(gpu_xy.targets.to(Device(kCPU)), cpu_xy.targets));
  }
}

TEST(TokenWindowCuda, RandomWindowsOnTheGpuEqualTheCpuOnes) {
  SKIP_WITHOUT_CUDA();
  const auto dataset =
      std::make_shared<TokenWindowDataset>(varied_tokens(20000), TokenWindowOptions(64).seed(1337));
  const auto options = DataLoaderOptions(16).shuffle(true).seed(3);
  DataLoader cpu_loader(dataset, DataLoaderOptions(options));
  DataLoader gpu_loader(dataset, DataLoaderOptions(options).num_workers(2).device(Device(kCUDA)));
  for (int64_t epoch : {0, 1}) {
    SCOPED_TRACE(::testing::Message() << "epoch " << epoch);
    expect_same_windows(one_pass(gpu_loader, epoch), one_pass(cpu_loader, epoch));
  }
}

TEST(TokenWindowCuda, DeviceResidentConsecutiveWindowsEqualTheCpuOnes) {
  SKIP_WITHOUT_CUDA();
  const auto dataset = std::make_shared<TokenWindowDataset>(
      varied_tokens(5000), TokenWindowOptions(32).placement(WindowPlacement::Consecutive));
  DataLoader cpu_loader(dataset, DataLoaderOptions(8));
  DataLoader resident(dataset, DataLoaderOptions(8).device_resident(true).device(Device(kCUDA)));
  expect_same_windows(one_pass(resident, 0), one_pass(cpu_loader, 0));
}

}  // namespace
}  // namespace minidl::data
