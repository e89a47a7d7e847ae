// Adam, AdamW, RMSprop and Adagrad on CUDA against the CPU step (which adam_test.cpp,
// rmsprop_test.cpp and adagrad_test.cpp pin to PyTorch): float32, float16 and bfloat16, sizes
// across chunk boundaries, channels-last parameters; the launches per step (one step-count
// increment and one update per (device, dtype)); a found_inf flag that skips on the device, step
// counts included; and a captured step whose replays match eager steps while a scheduler changes
// the lr. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "minidl/core/cuda/graph.h"
#include "minidl/core/cuda/stream.h"
#include "minidl/ops/multi_tensor_table.h"
#include "minidl/optim/adagrad.h"
#include "minidl/optim/adam.h"
#include "minidl/optim/lr_scheduler.h"
#include "minidl/optim/rmsprop.h"
#include "test_util.h"

namespace minidl::optim {
namespace {

using testing::all_close;

const Device kGpu(kCUDA, 0);

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
      cuda.push_back(values.to(kGpu).requires_grad_(true));
    }
  }
  void set_gradients(int step) {
    for (size_t i = 0; i < cpu.size(); ++i) {
      Tensor grad = wiggly(cpu[i].sizes(), 10.0 * step + static_cast<double>(i)).to(cpu[i].dtype());
      cpu[i].set_grad(grad);
      cuda[i].set_grad(grad.to(kGpu));
    }
  }
};

// One optimizer of each kind over two groups (the second with options of its own), by name.
// eps is PyTorch's default, 1e-8, but for float16 (see FusedStepsMatchTheCpuInTwoLaunchesPerStep).
using MakeOptimizer =
    std::function<std::unique_ptr<MultiTensorOptimizer>(std::vector<Tensor>, double eps)>;
constexpr double kDefaultEps = 1e-8;

std::vector<OptimizerParamGroup> split(const std::vector<Tensor>& params,
                                       const OptimizerOptions& second) {
  const auto middle = params.begin() + static_cast<std::ptrdiff_t>(params.size() / 2);
  return {OptimizerParamGroup(std::vector<Tensor>(params.begin(), middle)),
          OptimizerParamGroup(std::vector<Tensor>(middle, params.end()), second)};
}

struct Case {
  std::string name;
  MakeOptimizer make;
};

std::vector<Case> cases() {
  return {
      {"Adam",
       [](std::vector<Tensor> p, double eps) -> std::unique_ptr<MultiTensorOptimizer> {
         return std::make_unique<Adam>(
             split(p, AdamOptions(0.02).amsgrad(true).maximize(true).eps(eps)),
             AdamOptions(0.01).weight_decay(0.1).betas({0.8, 0.9}).eps(eps));
       }},
      {"AdamW",
       [](std::vector<Tensor> p, double eps) -> std::unique_ptr<MultiTensorOptimizer> {
         return std::make_unique<AdamW>(split(p, AdamWOptions(0.05).weight_decay(0).eps(eps)),
                                        AdamWOptions(0.01).amsgrad(true).eps(eps));
       }},
      {"RMSprop",
       [](std::vector<Tensor> p, double eps) -> std::unique_ptr<MultiTensorOptimizer> {
         return std::make_unique<RMSprop>(
             split(p, RMSpropOptions(0.005).momentum(0.5).eps(eps)),
             RMSpropOptions(0.01).centered(true).weight_decay(0.1).eps(eps));
       }},
      {"Adagrad",
       [](std::vector<Tensor> p, double eps) -> std::unique_ptr<MultiTensorOptimizer> {
         return std::make_unique<Adagrad>(
             split(p, AdagradOptions(0.05).lr_decay(0.1).maximize(true).eps(eps)),
             AdagradOptions(0.02).weight_decay(0.1).initial_accumulator_value(0.1).eps(eps));
       }},
  };
}

// A state tensor with the parameter's shape that every step writes.
const char* moment_key(const std::string& optimizer) {
  if (optimizer == "RMSprop") return "square_avg";
  if (optimizer == "Adagrad") return "sum";
  return "exp_avg";
}

void expect_same_state(const Optimizer& cuda_optimizer, const std::vector<Tensor>& cuda_params,
                       const Optimizer& cpu_optimizer, const std::vector<Tensor>& cpu_params,
                       double tolerance) {
  for (size_t i = 0; i < cpu_params.size(); ++i) {
    SCOPED_TRACE("parameter " + std::to_string(i));
    EXPECT_TRUE(all_close(cuda_params[i].to(kCPU), cpu_params[i], tolerance, tolerance));
    const ParamState& expected = *cpu_optimizer.state(cpu_params[i]);
    const ParamState& actual = *cuda_optimizer.state(cuda_params[i]);
    ASSERT_EQ(actual.size(), expected.size());
    for (const auto& [key, value] : expected) {
      EXPECT_TRUE(actual.at(key).is_cuda()) << key;
      EXPECT_EQ(actual.at(key).dtype(), value.dtype()) << key;
      EXPECT_TRUE(all_close(actual.at(key).to(kCPU), value, tolerance, tolerance)) << key;
    }
  }
}

TEST(AdamCuda, FusedStepsMatchTheCpuInTwoLaunchesPerStep) {
  SKIP_WITHOUT_CUDA();
  for (const Case& c : cases()) {
    for (DType dtype : {kFloat32, kFloat16, kBFloat16}) {
      SCOPED_TRACE(c.name + " " + std::string(dtype_name(dtype)));
      // Sizes below, at and above the chunk size, and one of several chunks.
      Twin twin({{3, 5},
                 {kMultiTensorChunkElements},
                 {kMultiTensorChunkElements + 7},
                 {7},
                 {64, 3, 3, 3},
                 {5 * kMultiTensorChunkElements + 1}},
                dtype);
      // eps 1e-8 rounds to 0 in float16, where the single-tensor step both devices follow keeps
      // its denominator (as PyTorch's does), so an element whose v is 0 (a zero gradient, or
      // one so small that its square underflows) divides by 0 on both devices: nan or inf,
      // which all_close cannot compare. 2^-10 is a float16 and keeps every value finite.
      const double eps = dtype == kFloat16 ? 0x1p-10 : kDefaultEps;
      std::unique_ptr<MultiTensorOptimizer> cpu_optimizer = c.make(twin.cpu, eps);
      std::unique_ptr<MultiTensorOptimizer> cuda_optimizer = c.make(twin.cuda, eps);
      for (int step = 0; step < 4; ++step) {
        twin.set_gradients(step);
        cpu_optimizer->step();
        cuda_optimizer->step();
        // One dtype on one device: the step-count increment and the update.
        EXPECT_EQ(cuda_optimizer->fused_stats().kernel_launches,
                  2 * static_cast<uint64_t>(step + 1));
      }
      // The same float arithmetic, but CUDA fuses multiply-adds and its pow may differ from
      // glibc's in the last bit: float32 to a few ulps; 16-bit types to one rounding.
      const double tolerance = dtype == kFloat32 ? 1e-5 : 2e-2;
      expect_same_state(*cuda_optimizer, twin.cuda, *cpu_optimizer, twin.cpu, tolerance);
      EXPECT_EQ(cpu_optimizer->fused_stats().kernel_launches, 0u);
      EXPECT_EQ(cuda_optimizer->state(twin.cuda[0])->at("step").to(kCPU).item<float>(), 4.0f);
    }
  }
}

TEST(AdamCuda, ChannelsLastParametersAndTwoDtypesInTwoTables) {
  SKIP_WITHOUT_CUDA();
  Twin twin({{8, 3, 5, 5}, {8}});
  Twin half_twin({{16, 4}}, kBFloat16);
  twin.cuda[0] = twin.cuda[0].detach().contiguous(MemoryFormat::ChannelsLast).requires_grad_(true);
  std::vector<Tensor> cpu = twin.cpu, cuda = twin.cuda;
  cpu.push_back(half_twin.cpu[0]);
  cuda.push_back(half_twin.cuda[0]);
  AdamW cpu_optimizer(cpu, AdamWOptions(0.01).amsgrad(true));
  AdamW cuda_optimizer(cuda, AdamWOptions(0.01).amsgrad(true));
  for (int step = 0; step < 3; ++step) {
    twin.set_gradients(step);  // row-major gradients for the channels-last parameter
    half_twin.set_gradients(step);
    cpu_optimizer.step();
    cuda_optimizer.step();
  }
  for (size_t i = 0; i < 2; ++i) EXPECT_TRUE(all_close(cuda[i].to(kCPU), cpu[i], 1e-5, 1e-5)) << i;
  EXPECT_TRUE(all_close(cuda[2].to(kCPU), cpu[2], 2e-2, 2e-2));
  EXPECT_TRUE(cuda[0].is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_EQ(cuda_optimizer.state(cuda[0])->at("exp_avg").strides(), cuda[0].strides());
  // Two tables (float32, bfloat16), two launches each per step.
  EXPECT_EQ(cuda_optimizer.fused_stats().kernel_launches, 3u * 4u);
}

TEST(AdamCuda, AFoundInfFlagSkipsTheStepAndItsCountOnTheDevice) {
  SKIP_WITHOUT_CUDA();
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    Twin twin({{100}, {3, 4}});
    std::unique_ptr<MultiTensorOptimizer> optimizer = c.make(twin.cuda, kDefaultEps);
    twin.set_gradients(0);
    Tensor found_inf = full({}, 0.0, kGpu);
    optimizer->step_unless_found_inf(found_inf);  // clean: counted
    const Tensor after_one = twin.cuda[0].to(kCPU);
    const Tensor state_after_one = optimizer->state(twin.cuda[0])->at(moment_key(c.name)).to(kCPU);
    found_inf.fill_(1.0);
    twin.set_gradients(1);
    optimizer->step_unless_found_inf(found_inf);  // skipped on the device
    optimizer->step_unless_found_inf(found_inf);
    EXPECT_TRUE(all_close(twin.cuda[0].to(kCPU), after_one, 0, 0));
    EXPECT_TRUE(all_close(optimizer->state(twin.cuda[0])->at(moment_key(c.name)).to(kCPU),
                          state_after_one, 0, 0));
    for (const Tensor& p : twin.cuda)
      EXPECT_EQ(optimizer->state(p)->at("step").to(kCPU).item<float>(), 1.0f);
    found_inf.fill_(0.0);
    optimizer->step_unless_found_inf(found_inf);
    EXPECT_EQ(optimizer->state(twin.cuda[1])->at("step").to(kCPU).item<float>(), 2.0f);
  }
}

TEST(AdamCuda, ACapturedStepReplaysAsEagerStepsWithTheLrChangingBetweenReplays) {
  SKIP_WITHOUT_CUDA();
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    cuda::Stream stream = cuda::Stream::create(0);
    Twin graphed({{5}, {40000}, {3, 7}});
    Twin eager({{5}, {40000}, {3, 7}});
    cuda::synchronize();  // the parameters were made on the default stream
    cuda::StreamGuard on_stream(stream);
    std::unique_ptr<MultiTensorOptimizer> graphed_optimizer = c.make(graphed.cuda, kDefaultEps);
    std::unique_ptr<MultiTensorOptimizer> eager_optimizer = c.make(eager.cuda, kDefaultEps);
    CosineAnnealingLR graphed_schedule(*graphed_optimizer, 6);
    CosineAnnealingLR eager_schedule(*eager_optimizer, 6);
    // Fixed gradients: the graph reads these tensors at every replay.
    graphed.set_gradients(0);
    eager.set_gradients(0);
    graphed_optimizer->step();  // eager warm-up makes the state
    eager_optimizer->step();
    graphed_schedule.step();
    eager_schedule.step();
    cuda::CudaGraph graph;
    {
      cuda::GraphCapture capture(graph);
      graphed_optimizer->step();
      capture.end();
    }
    const uint64_t launches_at_capture = graphed_optimizer->fused_stats().kernel_launches;
    for (int k = 0; k < 5; ++k) {
      graph.replay();
      eager_optimizer->step();
      graphed_schedule.step();  // the next replay reads the new lr from its hook
      eager_schedule.step();
    }
    EXPECT_EQ(graphed_optimizer->fused_stats().kernel_launches, launches_at_capture);
    cuda::synchronize();
    // The same kernels on the same inputs: bit for bit, step counts included.
    for (size_t i = 0; i < graphed.cuda.size(); ++i) {
      EXPECT_TRUE(all_close(graphed.cuda[i].to(kCPU), eager.cuda[i].to(kCPU), 0, 0)) << i;
      EXPECT_EQ(graphed_optimizer->state(graphed.cuda[i])->at("step").to(kCPU).item<float>(), 6.0f);
    }
  }
}

TEST(AdamCuda, ChangingWhetherAGroupKeepsStateAfterTheCaptureIsAClearError) {
  SKIP_WITHOUT_CUDA();
  cuda::Stream stream = cuda::Stream::create(0);
  Twin twin({{5}, {7}});
  cuda::synchronize();
  cuda::StreamGuard on_stream(stream);
  Adam optimizer(twin.cuda, AdamOptions(0.1));
  twin.set_gradients(0);
  optimizer.step();
  cuda::CudaGraph graph;
  {
    cuda::GraphCapture capture(graph);
    optimizer.step();
    capture.end();
  }
  graph.replay();
  dynamic_cast<AdamOptions&>(optimizer.param_groups()[0].options()).amsgrad(true);
  EXPECT_ERROR_CONTAINS(graph.replay(),
                        "amsgrad is on but was off when the step was captured into a CUDA graph");
}

TEST(AdamCuda, CapturingBeforeTheStateExistsIsAClearError) {
  SKIP_WITHOUT_CUDA();
  cuda::Stream stream = cuda::Stream::create(0);
  Twin twin(std::vector<Shape>{{5}});
  cuda::synchronize();
  cuda::StreamGuard on_stream(stream);
  RMSprop optimizer(twin.cuda);
  twin.set_gradients(0);
  cuda::CudaGraph graph;
  EXPECT_ERROR_CONTAINS(
      [&] {
        cuda::GraphCapture capture(graph);
        optimizer.step();
        capture.end();
      }(),
      "has no step count yet, and a CUDA graph is being captured; run one step eagerly");
  EXPECT_EQ(optimizer.state(twin.cuda[0]), nullptr);
}

}  // namespace
}  // namespace minidl::optim
