// amp::GradScaler on CUDA against the CPU (whose behaviour grad_scaler_test.cpp pins down):
// the fused unscale + inf check over many gradients (across chunk boundaries, 16-bit too), the
// device-side skip in SGD's fused kernel, the scale update kernel, and the consecutive-skip
// error through the host mirror.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "minidl/core/cuda/device.h"
#include "minidl/ops/reduce.h"
#include "minidl/optim/grad_scaler.h"
#include "minidl/optim/sgd.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::wiggly;

// The same parameters and scaled gradients on both devices.
struct Twin {
  std::vector<Tensor> cpu, cuda;
  Twin(const std::vector<Shape>& shapes, DType dtype) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      const Tensor values = wiggly(shapes[i], static_cast<double>(i), dtype);
      cpu.push_back(values.clone().requires_grad_());
      cuda.push_back(values.to(Device(kCUDA)).requires_grad_());
    }
  }
  // Gradients as a scaled backward would leave them: true gradient * scale.
  void set_scaled_gradients(double scale, int step, bool poison) {
    for (size_t i = 0; i < cpu.size(); ++i) {
      Tensor grad = wiggly(cpu[i].sizes(), 10.0 * step + static_cast<double>(i), kFloat32)
                        .mul(scale)
                        .to(cpu[i].dtype());
      if (poison && i + 1 == cpu.size()) {
        Tensor as_float = grad.to(kFloat32);
        as_float.data_ptr<float>()[as_float.numel() - 1] = std::numeric_limits<float>::infinity();
        grad = as_float.to(cpu[i].dtype());
      }
      cpu[i].set_grad(grad);
      cuda[i].set_grad(grad.to(Device(kCUDA)));
    }
  }
};

// scale(): the scaler's state goes where the loss is.
void place_state(amp::GradScaler& cpu_scaler, amp::GradScaler& cuda_scaler) {
  (void)cpu_scaler.scale(scalar_tensor(1.0));
  (void)cuda_scaler.scale(scalar_tensor(1.0, TensorOptions(kFloat32).device(Device(kCUDA))));
}

class GradScalerCuda : public ::testing::TestWithParam<DType> {};

TEST_P(GradScalerCuda, UnscaleStepAndUpdateMatchTheCpu) {
  SKIP_WITHOUT_CUDA();
  const DType dtype = GetParam();
  // Sizes across the 16384-element chunks of the multi-tensor kernels.
  Twin twin({{3, 5}, {16384}, {16385}, {40000}, {7}}, dtype);
  const auto options = amp::GradScalerOptions().init_scale(1024).growth_interval(2);
  amp::GradScaler cpu_scaler(options), cuda_scaler(options);
  optim::SGD cpu_sgd(twin.cpu, optim::SGDOptions(0.1).momentum(0.9));
  optim::SGD cuda_sgd(twin.cuda, optim::SGDOptions(0.1).momentum(0.9));
  const double tolerance = dtype == kFloat32 ? 1e-6 : 1e-2;
  // A skipped first step (momentum buffers created, then left alone), clean steps, a growth,
  // another skip.
  const std::vector<bool> poisoned = {true, false, false, false, true, false};
  for (size_t step = 0; step < poisoned.size(); ++step) {
    const double scale = cpu_scaler.get_scale();
    ASSERT_EQ(cuda_scaler.get_scale(), scale) << "step " << step;
    place_state(cpu_scaler, cuda_scaler);
    twin.set_scaled_gradients(scale, static_cast<int>(step), poisoned[step]);
    cpu_scaler.unscale_(cpu_sgd);
    cuda_scaler.unscale_(cuda_sgd);
    // The same float multiply on both devices: bit for bit, inf included.
    for (size_t i = 0; i < twin.cpu.size(); ++i) {
      const Tensor from_cuda = twin.cuda[i].grad().cpu(), on_cpu = twin.cpu[i].grad();
      EXPECT_EQ(std::memcmp(from_cuda.data_ptr(), on_cpu.data_ptr(), on_cpu.nbytes()), 0)
          << "step " << step << ", gradient " << i;
    }
    cpu_scaler.step(cpu_sgd);
    cuda_scaler.step(cuda_sgd);
    cpu_scaler.update();
    cuda_scaler.update();
    for (size_t i = 0; i < twin.cpu.size(); ++i)
      EXPECT_TRUE(all_close(twin.cuda[i].cpu(), twin.cpu[i], tolerance, tolerance))
          << "step " << step << ", parameter " << i;
  }
  EXPECT_EQ(cuda_scaler.state_dict(), cpu_scaler.state_dict());
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GradScalerCuda, ::testing::Values(kFloat32, kFloat16, kBFloat16),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(dtype_name(info.param));
                         });

TEST(GradScalerCudaSkip, ASkippedStepLeavesEveryWeightBitwiseUnchanged) {
  SKIP_WITHOUT_CUDA();
  Twin twin({{4, 4}, {20000}}, kFloat32);
  optim::SGD sgd(twin.cuda, optim::SGDOptions(0.1).momentum(0.9).weight_decay(0.01));
  amp::GradScaler scaler;
  (void)scaler.scale(scalar_tensor(1.0, TensorOptions(kFloat32).device(Device(kCUDA))));
  twin.set_scaled_gradients(scaler.get_scale(), 0, /*poison=*/true);
  std::vector<Tensor> before;
  for (const Tensor& param : twin.cuda) before.push_back(param.detach().cpu());
  scaler.step(sgd);
  scaler.update();
  for (size_t i = 0; i < before.size(); ++i) {
    const Tensor after = twin.cuda[i].detach().cpu();
    EXPECT_EQ(std::memcmp(after.data_ptr(), before[i].data_ptr(), after.nbytes()), 0)
        << "parameter " << i;
  }
  EXPECT_EQ(scaler.get_scale(), 32768.0);
}

TEST(GradScalerCudaSkip, TooManyConsecutiveSkipsIsAnError) {
  SKIP_WITHOUT_CUDA();
  Twin twin({{8}}, kFloat32);
  optim::SGD sgd(twin.cuda, optim::SGDOptions(0.1));
  amp::GradScaler scaler(amp::GradScalerOptions().max_consecutive_skips(2));
  const Tensor loss = scalar_tensor(1.0, TensorOptions(kFloat32).device(Device(kCUDA)));
  auto skipped_iteration = [&] {
    (void)scaler.scale(loss);
    twin.set_scaled_gradients(1.0, 0, /*poison=*/true);
    scaler.step(sgd);
    scaler.update();
  };
  skipped_iteration();
  skipped_iteration();
  // The host sees the count through the mirror after the device has run the update, or at
  // get_scale() at the latest.
  EXPECT_ERROR_CONTAINS(
      [&] {
        skipped_iteration();
        cuda::synchronize();
        skipped_iteration();
      }(),
      "consecutive steps were skipped");
  EXPECT_ERROR_CONTAINS(scaler.get_scale(), "a run that only produces inf is broken");
}

}  // namespace
}  // namespace minidl
