// Recovers y = 2x + 5 from noisy samples by gradient descent with autograd: the smallest
// complete training loop (forward, loss, backward, update under NoGradGuard, zero the grads).
// Exits non-zero when the fitted coefficients are not within 0.05 of the true ones.
#include <spdlog/spdlog.h>

#include <cmath>
#include <cstdio>

#include "minidl/minidl.h"

int main() {
  using namespace minidl;
  constexpr int64_t kSamples = 1024;
  constexpr double kTrueW = 2.0, kTrueB = 5.0, kNoiseStd = 0.1;
  constexpr double kLearningRate = 0.1;
  constexpr int kSteps = 200;

  manual_seed(42);
  Tensor x = arange(-2.0, 2.0, 4.0 / kSamples, kFloat32).view({kSamples, 1});  // [1024, 1]
  Tensor y = x * kTrueW + kTrueB + randn({kSamples, 1}) * kNoiseStd;           // [1024, 1]

  Tensor w = zeros({1});  // [1]
  Tensor b = zeros({1});  // [1]
  w.requires_grad_();
  b.requires_grad_();

  for (int step = 0; step < kSteps; ++step) {
    Tensor loss = mean(pow(w * x + b - y, 2));
    loss.backward();
    {
      NoGradGuard no_grad;
      w.sub_(w.grad(), kLearningRate);  // w -= lr * dloss/dw
      b.sub_(b.grad(), kLearningRate);
      w.grad().zero_();
      b.grad().zero_();
    }
    if (step % 50 == 0 || step == kSteps - 1)
      logger().info("step {:3d}: loss {:.5f}", step, loss.item<float>());
  }

  const float fitted_w = w.item<float>(), fitted_b = b.item<float>();
  std::printf("w = %.2f, b = %.2f\n", fitted_w, fitted_b);
  if (std::abs(fitted_w - kTrueW) > 0.05 || std::abs(fitted_b - kTrueB) > 0.05) {
    std::fprintf(stderr, "fit_line: expected w = %.2f, b = %.2f within 0.05\n", kTrueW, kTrueB);
    return 1;
  }
  return 0;
}
