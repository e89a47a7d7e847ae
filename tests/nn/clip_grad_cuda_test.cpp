// nn::utils::clip_grad_norm_ and clip_grad_value_ on a GPU: the same norms and clipped
// gradients as the CPU (float32, float16 and bfloat16 gradients, many tensors spanning several
// chunks), the result left on the device, a call captured into a CUDA graph (which fails on any
// wait for the device) replaying as eager calls compute, and gradients on two devices (the CPU
// and a GPU). Skipped without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "minidl/core/cuda/graph.h"
#include "minidl/core/cuda/stream.h"
#include "minidl/nn/utils/clip_grad.h"
#include "test_util.h"

namespace minidl::nn::utils {
namespace {

using minidl::testing::all_close;
using minidl::testing::wiggly;

const Device kGpu(kCUDA, 0);
constexpr double kInf = std::numeric_limits<double>::infinity();

// Sizes from one element to several chunks (a chunk is 16384 elements), 37 tensors.
std::vector<int64_t> tensor_sizes() {
  std::vector<int64_t> sizes;
  for (int64_t t = 0; t < 37; ++t) sizes.push_back(1 + (t * t * 1543) % 50000);
  sizes[5] = 16384;
  sizes[6] = 16385;
  return sizes;
}

// Parameters (of `dtype`) with wiggly gradients on `device`, the same values for every device.
std::vector<Tensor> parameters_on(Device device, DType dtype) {
  std::vector<Tensor> parameters;
  const std::vector<int64_t> sizes = tensor_sizes();
  for (size_t t = 0; t < sizes.size(); ++t) {
    Tensor parameter = zeros({sizes[t]}, TensorOptions(dtype).device(device)).requires_grad_(true);
    parameter.set_grad(wiggly({sizes[t]}, static_cast<double>(t), dtype).to(device));
    parameters.push_back(parameter);
  }
  return parameters;
}

// Within a few units in the last place of `dtype` (the sums run in another order).
double tolerance(DType dtype) {
  return dtype == kFloat32 ? 1e-6 : dtype == kFloat16 ? 2e-3 : 1.6e-2;
}

struct ParityCase {
  DType dtype;
  double norm_type;
};

class ClipGradCudaParity : public ::testing::TestWithParam<ParityCase> {};

TEST_P(ClipGradCudaParity, MatchesTheCpu) {
  SKIP_WITHOUT_CUDA();
  const auto [dtype, norm_type] = GetParam();
  const std::vector<Tensor> on_cpu = parameters_on(Device(kCPU), dtype);
  const std::vector<Tensor> on_gpu = parameters_on(kGpu, dtype);
  const Tensor cpu_norm = clip_grad_norm_(on_cpu, 1.0, norm_type);
  const Tensor gpu_norm = clip_grad_norm_(on_gpu, 1.0, norm_type);
  ASSERT_TRUE(gpu_norm.is_cuda());  // left on the device: nothing waited for it
  ASSERT_EQ(gpu_norm.dtype(), dtype);
  EXPECT_TRUE(
      all_close(gpu_norm.to(kCPU).to(kFloat64), cpu_norm.to(kFloat64), 0, tolerance(dtype)));
  for (size_t t = 0; t < on_cpu.size(); ++t)
    EXPECT_TRUE(all_close(on_gpu[t].grad().to(kCPU).to(kFloat64), on_cpu[t].grad().to(kFloat64),
                          1e-7, 2 * tolerance(dtype)))
        << "gradient " << t;
  // clip_grad_value_ clamps identically: the same bounds in the same dtype.
  clip_grad_value_(on_cpu, 0.001);
  clip_grad_value_(on_gpu, 0.001);
  for (size_t t = 0; t < on_cpu.size(); ++t)
    EXPECT_TRUE(all_close(on_gpu[t].grad().to(kCPU).to(kFloat64), on_cpu[t].grad().to(kFloat64),
                          1e-7, 2 * tolerance(dtype)))
        << "gradient " << t << " after clip_grad_value_";
}

INSTANTIATE_TEST_SUITE_P(ClipGrad, ClipGradCudaParity,
                         ::testing::Values(ParityCase{kFloat32, 2.0}, ParityCase{kFloat32, kInf},
                                           ParityCase{kFloat32, 1.0}, ParityCase{kFloat32, 3.0},
                                           ParityCase{kFloat16, 2.0}, ParityCase{kFloat16, kInf},
                                           ParityCase{kBFloat16, 2.0}, ParityCase{kBFloat16, kInf}),
                         [](const auto& info) {
                           const double p = info.param.norm_type;
                           return std::string(dtype_name(info.param.dtype)) + "_" +
                                  (std::isinf(p) ? std::string("inf")
                                                 : std::to_string(static_cast<int>(p)));
                         });

TEST(ClipGradCuda, MixedDtypesOnTheGpuMatchTheCpu) {
  SKIP_WITHOUT_CUDA();
  std::vector<Tensor> on_cpu = parameters_on(Device(kCPU), kFloat16);
  std::vector<Tensor> on_gpu = parameters_on(kGpu, kFloat16);
  for (const DType dtype : {kFloat32, kBFloat16}) {
    const std::vector<Tensor> cpu_more = parameters_on(Device(kCPU), dtype);
    const std::vector<Tensor> gpu_more = parameters_on(kGpu, dtype);
    on_cpu.insert(on_cpu.end(), cpu_more.begin(), cpu_more.begin() + 9);
    on_gpu.insert(on_gpu.end(), gpu_more.begin(), gpu_more.begin() + 9);
  }
  const Tensor cpu_norm = clip_grad_norm_(on_cpu, 0.5);
  const Tensor gpu_norm = clip_grad_norm_(on_gpu, 0.5);
  ASSERT_EQ(gpu_norm.dtype(), kFloat32);  // float16 with bfloat16 promotes to float32
  EXPECT_TRUE(all_close(gpu_norm.to(kCPU), cpu_norm, 0, 1e-6));
  for (size_t t = 0; t < on_cpu.size(); ++t)
    EXPECT_TRUE(all_close(on_gpu[t].grad().to(kCPU).to(kFloat64), on_cpu[t].grad().to(kFloat64),
                          1e-7, 2 * tolerance(kBFloat16)))
        << "gradient " << t;
}

// A capture fails on any wait for the device (a copy to the host, a synchronisation), so a
// call that can be captured never waits. Replays read new gradients (the captured tables hold
// their addresses) and compute what eager calls compute.
TEST(ClipGradCuda, ACallCapturedInACudaGraphReplaysAsEagerCalls) {
  SKIP_WITHOUT_CUDA();
  const cuda::Stream stream = cuda::Stream::create(0);
  cuda::StreamGuard on_stream(stream);
  const std::vector<Tensor> parameters = parameters_on(kGpu, kFloat32);
  (void)clip_grad_norm_(parameters, 1.0);  // warm-up
  cuda::CudaGraph graph;
  Tensor captured_norm;
  {
    cuda::GraphCapture capture(graph);
    captured_norm = clip_grad_norm_(parameters, 1.0);
    capture.end();
  }
  for (int replay = 1; replay <= 3; ++replay) {
    const std::vector<Tensor> eager = parameters_on(kGpu, kFloat32);
    for (size_t t = 0; t < parameters.size(); ++t) {
      eager[t].grad().mul_(static_cast<double>(replay));
      parameters[t].grad().copy_(eager[t].grad());
    }
    const Tensor eager_norm = clip_grad_norm_(eager, 1.0);
    graph.replay();
    EXPECT_TRUE(testing::bitwise_equal(captured_norm.to(kCPU), eager_norm.to(kCPU)))
        << "replay " << replay;
    for (size_t t = 0; t < parameters.size(); ++t)
      EXPECT_TRUE(testing::bitwise_equal(parameters[t].grad().to(kCPU), eager[t].grad().to(kCPU)))
          << "replay " << replay << ", gradient " << t;
  }
  // error_if_nonfinite reads the norm on the host, which a capture refuses.
  cuda::CudaGraph refused;
  cuda::GraphCapture capture(refused);
  EXPECT_THROW(clip_grad_norm_(parameters, 1.0, 2.0, /*error_if_nonfinite=*/true), Error);
}

TEST(ClipGradCuda, ANonFiniteNormOnTheGpuIsAnErrorWhenAskedFor) {
  SKIP_WITHOUT_CUDA();
  const std::vector<Tensor> parameters = parameters_on(kGpu, kFloat16);
  parameters[3].grad().fill_(std::numeric_limits<double>::infinity());
  EXPECT_ERROR_CONTAINS(clip_grad_norm_(parameters, 1.0, 2.0, /*error_if_nonfinite=*/true),
                        "clip_grad_norm_: the total norm of order 2 of the gradients is inf");
}

// Gradients on the CPU and a GPU: a norm per device, combined on the first gradient's device.
TEST(ClipGradCuda, GradientsOnTwoDevicesAreClippedTogether) {
  SKIP_WITHOUT_CUDA();
  const std::vector<Tensor> reference = parameters_on(Device(kCPU), kFloat32);
  std::vector<Tensor> mixed = parameters_on(kGpu, kFloat32);
  const std::vector<Tensor> on_cpu = parameters_on(Device(kCPU), kFloat32);
  for (size_t t = 0; t < mixed.size(); t += 2) mixed[t] = on_cpu[t];
  for (const double norm_type : {2.0, kInf}) {
    const Tensor expected = clip_grad_norm_(reference, 0.25, norm_type);
    const Tensor norm = clip_grad_norm_(mixed, 0.25, norm_type);
    EXPECT_TRUE(norm.is_cpu());  // the first gradient's device
    EXPECT_TRUE(all_close(norm, expected, 0, 1e-6)) << "norm_type " << norm_type;
    for (size_t t = 0; t < mixed.size(); ++t)
      EXPECT_TRUE(all_close(mixed[t].grad().to(kCPU), reference[t].grad(), 1e-7, 2e-6))
          << "gradient " << t;
  }
  Tensor float64 = zeros({3}, TensorOptions(kFloat64)).requires_grad_(true);
  float64.set_grad(ones({3}, TensorOptions(kFloat64)));
  EXPECT_ERROR_CONTAINS(clip_grad_norm_({mixed[1], float64}, 1.0),
                        "clip_grad_norm_: expected CUDA gradients alone or beside float32");
}

}  // namespace
}  // namespace minidl::nn::utils
