// Double backward on CUDA: a gradient penalty (autograd::grad with create_graph through linear,
// tanh, relu, softmax, mse_loss) gives the CPU's numbers in float32, and a Hessian-vector product
// of a batched matmul too.
#include <gtest/gtest.h>

#include <vector>

#include "minidl/core/autograd/engine.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/linalg.h"
#include "minidl/ops/loss.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

const Device kGpu(kCUDA, 0);

// The loss with its gradient penalty, and the gradients of every parameter, on `device`.
std::vector<Tensor> penalty_gradients(Device device) {
  std::vector<Tensor> params = {testing::wiggly({6, 3}, 0.0), testing::wiggly({6}, 1.0),
                                testing::wiggly({6, 6}, 2.0), testing::wiggly({6}, 3.0),
                                testing::wiggly({2, 6}, 4.0), testing::wiggly({2}, 5.0)};
  for (Tensor& p : params) p = (p * 0.5).to(device).requires_grad_(true);
  Tensor x = testing::wiggly({5, 3}, 6.0).to(device).requires_grad_(true);
  const Tensor y = testing::wiggly({5, 2}, 7.0).to(device);
  Tensor out = linear(relu(linear(tanh(linear(x, params[0], params[1])), params[2], params[3])),
                      params[4], params[5]);
  Tensor scores = softmax(out, 1);
  Tensor gx = autograd::grad({sum(scores * y)}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  Tensor loss = mse_loss(out, y) + 10.0 * mean(sum(gx * gx, {1}));
  std::vector<Tensor> results = autograd::grad({loss}, params);
  results.insert(results.begin(), loss.detach());
  return results;
}

TEST(DoubleBackwardCuda, GradientPenaltyMatchesTheCpu) {
  SKIP_WITHOUT_CUDA();
  const std::vector<Tensor> cpu = penalty_gradients(Device(kCPU));
  const std::vector<Tensor> gpu = penalty_gradients(kGpu);
  ASSERT_EQ(cpu.size(), gpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    EXPECT_TRUE(gpu[i].is_cuda()) << i;
    EXPECT_TRUE(testing::all_close(gpu[i].cpu(), cpu[i], 1e-4, 1e-5)) << "result " << i;
  }
}

TEST(DoubleBackwardCuda, BatchedMatmulHessianVectorProductMatchesTheCpu) {
  SKIP_WITHOUT_CUDA();
  std::vector<std::vector<Tensor>> results;
  for (Device device : {Device(kCPU), kGpu}) {
    Tensor a = testing::wiggly({2, 3, 4}, 0.0).to(device).requires_grad_(true);
    Tensor b = testing::wiggly({4, 2}, 1.0).to(device).requires_grad_(true);
    std::vector<Tensor> g =
        autograd::grad({sum(tanh(matmul(a, b)))}, {a, b}, {}, std::nullopt, true);
    Tensor s = sum(g[0] * testing::wiggly({2, 3, 4}, 2.0).to(device)) +
               sum(g[1] * testing::wiggly({4, 2}, 3.0).to(device));
    results.push_back(autograd::grad({s}, {a, b}));
  }
  for (size_t i = 0; i < 2; ++i)
    EXPECT_TRUE(testing::all_close(results[1][i].cpu(), results[0][i], 1e-4, 1e-5)) << i;
}

}  // namespace
}  // namespace minidl
