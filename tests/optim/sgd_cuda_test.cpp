// The fused CUDA SGD step against the CPU step (which the hand-worked tests in sgd_test.cpp
// pin down): several groups, every option, sizes across chunk boundaries, channels-last and
// 16-bit parameters; one kernel launch per step; table uploads only when the table changed.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "minidl/ops/multi_tensor_table.h"
#include "minidl/optim/sgd.h"
#include "test_util.h"

namespace minidl::optim {
namespace {

using testing::all_close;

Tensor wiggly(const Shape& sizes, double offset) {
  std::vector<double> values(static_cast<size_t>(shape_numel(sizes)));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = std::sin(0.37 * static_cast<double>(i) + offset);
  return from_host(values.data(), sizes, kFloat64).to(kFloat32);
}

// The same parameters on the CPU and on the GPU.
struct Twin {
  std::vector<Tensor> cpu, cuda;
  explicit Twin(const std::vector<Shape>& shapes, DType dtype = kFloat32) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      Tensor values = wiggly(shapes[i], static_cast<double>(i)).to(dtype);
      cpu.push_back(values.clone().requires_grad_(true));
      cuda.push_back(values.to(Device(kCUDA)).requires_grad_(true));
    }
  }
  void set_gradients(int step) {
    for (size_t i = 0; i < cpu.size(); ++i) {
      Tensor grad = wiggly(cpu[i].sizes(), 10.0 * step + static_cast<double>(i)).to(cpu[i].dtype());
      cpu[i].set_grad(grad);
      cuda[i].set_grad(grad.to(Device(kCUDA)));
    }
  }
};

std::vector<OptimizerParamGroup> two_groups(const std::vector<Tensor>& params) {
  return {OptimizerParamGroup({params[0], params[1], params[2]}),
          OptimizerParamGroup({params[3], params[4]},
                              SGDOptions(0.02).momentum(0.8).dampening(0.3).weight_decay(0))};
}

TEST(SGDCuda, FusedStepMatchesTheCpuStepInOneLaunch) {
  SKIP_WITHOUT_CUDA();
  // Sizes below, at and above the chunk size (16384), and one of several chunks.
  Twin twin(
      {{3, 5}, {kMultiTensorChunkElements}, {kMultiTensorChunkElements + 7}, {7}, {64, 3, 3, 3}});
  const SGDOptions defaults = SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(5e-4);
  SGD cpu_optimizer(two_groups(twin.cpu), defaults);
  SGD cuda_optimizer(two_groups(twin.cuda), defaults);
  for (int step = 0; step < 4; ++step) {
    twin.set_gradients(step);
    cpu_optimizer.step();
    cuda_optimizer.step();
    EXPECT_EQ(cuda_optimizer.fused_stats().kernel_launches, static_cast<uint64_t>(step + 1));
  }
  for (size_t i = 0; i < twin.cpu.size(); ++i) {
    SCOPED_TRACE("parameter " + std::to_string(i));
    EXPECT_TRUE(all_close(twin.cuda[i], twin.cpu[i], 1e-5, 1e-5));
    EXPECT_TRUE(all_close(cuda_optimizer.state(twin.cuda[i])->at("momentum_buffer"),
                          cpu_optimizer.state(twin.cpu[i])->at("momentum_buffer"), 1e-5, 1e-5));
  }
  EXPECT_EQ(cpu_optimizer.fused_stats().kernel_launches, 0u);
}

TEST(SGDCuda, UploadsTheTableOnlyWhenItChanged) {
  SKIP_WITHOUT_CUDA();
  Twin twin({{100}, {200}});
  SGD optimizer(twin.cuda, SGDOptions(0.1).momentum(0.9));
  twin.set_gradients(0);
  optimizer.step();  // first table: buffers being initialised
  EXPECT_EQ(optimizer.fused_stats().table_uploads, 1u);
  optimizer.step();  // buffers now updated rather than initialised: the table changed
  EXPECT_EQ(optimizer.fused_stats().table_uploads, 2u);
  optimizer.step();  // same gradients, same lr: nothing to upload
  optimizer.step();
  EXPECT_EQ(optimizer.fused_stats().table_uploads, 2u);
  optimizer.param_groups()[0].options().set_lr(0.05);  // as a scheduler would
  optimizer.step();
  EXPECT_EQ(optimizer.fused_stats().table_uploads, 3u);
  EXPECT_EQ(optimizer.fused_stats().kernel_launches, 5u);
}

TEST(SGDCuda, ChannelsLastAndSixteenBitParameters) {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : {kFloat32, kFloat16, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    Twin twin({{8, 3, 5, 5}, {8}}, dtype);
    twin.cuda[0] =
        twin.cuda[0].detach().contiguous(MemoryFormat::ChannelsLast).requires_grad_(true);
    SGD cpu_optimizer(twin.cpu, SGDOptions(0.1).momentum(0.9).weight_decay(1e-2));
    SGD cuda_optimizer(twin.cuda, SGDOptions(0.1).momentum(0.9).weight_decay(1e-2));
    for (int step = 0; step < 3; ++step) {
      twin.set_gradients(step);  // row-major gradients for the channels-last parameter
      cpu_optimizer.step();
      cuda_optimizer.step();
    }
    // Both round the same float computation to the same 16-bit type; allow one rounding.
    const double tolerance = dtype == kFloat32 ? 1e-5 : 1e-2;
    for (size_t i = 0; i < twin.cpu.size(); ++i)
      EXPECT_TRUE(all_close(twin.cuda[i], twin.cpu[i], tolerance, tolerance));
    EXPECT_TRUE(twin.cuda[0].is_contiguous(MemoryFormat::ChannelsLast));
    // One dtype, one device: one launch per step.
    EXPECT_EQ(cuda_optimizer.fused_stats().kernel_launches, 3u);
  }
}

}  // namespace
}  // namespace minidl::optim
