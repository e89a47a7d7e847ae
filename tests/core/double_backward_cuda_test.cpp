// Double backward on CUDA: a gradient penalty (autograd::grad with create_graph through linear,
// tanh, relu, softmax, mse_loss) gives the CPU's numbers in float32, a Hessian-vector product
// of a batched matmul too, and so do the second derivatives of the ops whose first backward is a
// kernel (scans, norms, sorting, indexing, binary_cross_entropy; dropout against its own mask).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "minidl/core/autograd/engine.h"
#include "minidl/ops/dropout.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/embedding.h"
#include "minidl/ops/indexing.h"
#include "minidl/ops/linalg.h"
#include "minidl/ops/loss.h"
#include "minidl/ops/pointwise_loss.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "minidl/ops/scan.h"
#include "minidl/ops/shape.h"
#include "minidl/ops/sort.h"
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

// u * d/dx (v * f'(x)) for float32 x on `device`.
Tensor second_derivative(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input,
                         Device device) {
  // detach(): on the CPU to() returns `input` itself, whose requires_grad must stay unset for
  // the next device's call.
  Tensor x = input.detach().to(device).requires_grad_(true);
  const Tensor y = fn(x);
  const Tensor v = testing::wiggly(y.sizes(), 2.0).to(device);
  const Tensor g = autograd::grad({y}, {x}, {v}, std::nullopt, /*create_graph=*/true)[0];
  return autograd::grad({sum(g * testing::wiggly(x.sizes(), 3.0).to(device))}, {x})[0];
}

TEST(DoubleBackwardCuda, KernelOpsSecondDerivativesMatchTheCpu) {
  SKIP_WITHOUT_CUDA();
  const Tensor x = testing::wiggly({2, 4}, 0.0);
  const Tensor with_zeros =
      (x + 0.5) * tensor(std::vector<double>{1, 0, 1, 1, 0, 1, 0, 1}, {2, 4}).to(kFloat32);
  const Tensor probabilities = testing::wiggly({2, 4}, 0.0) * 0.3 + 0.5;
  const auto on = [](const Tensor& t, const Tensor& like) { return t.to(like.device()); };
  const std::vector<std::pair<std::string, std::pair<Tensor, std::function<Tensor(const Tensor&)>>>>
      cases = {
          {"cumprod with zeros", {with_zeros, [](const Tensor& t) { return cumprod(t, 1); }}},
          {"prod with zeros", {with_zeros, [](const Tensor& t) { return prod(t, 1); }}},
          {"cumsum", {x, [](const Tensor& t) { return sin(cumsum(t, 1)); }}},
          {"norm p=3", {x, [](const Tensor& t) { return norm(t, 3.0, {1}); }}},
          {"binary_cross_entropy",
           {probabilities,
            [&](const Tensor& t) {
              return binary_cross_entropy(t, on(probabilities.flip({1}), t), {}, Reduction::None);
            }}},
          {"sort", {x, [](const Tensor& t) { return exp(std::get<0>(sort(t, 0))); }}},
          {"topk", {x, [](const Tensor& t) { return square(std::get<0>(topk(t, 2, 1))); }}},
          {"gather",
           {x,
            [&](const Tensor& t) {
              return square(
                  gather(t, 1, on(tensor(std::vector<int64_t>{3, 0, 0, 1, 2, 1}, {2, 3}), t)));
            }}},
          {"index_select and flip", {x, [](const Tensor& t) { return sin(flip(t, {1})) * t; }}},
          {"embedding with padding_idx",
           {testing::wiggly({4, 3}, 0.0),
            [&](const Tensor& t) {
              return tanh(
                  embedding(t, on(tensor(std::vector<int64_t>{0, 1, 3, 3, 3, 2}, {2, 3}), t), 1));
            }}},
      };
  for (const auto& [name, input_and_fn] : cases) {
    SCOPED_TRACE(name);
    const Tensor cpu = second_derivative(input_and_fn.second, input_and_fn.first, Device(kCPU));
    const Tensor gpu = second_derivative(input_and_fn.second, input_and_fn.first, kGpu);
    EXPECT_TRUE(gpu.is_cuda());
    EXPECT_TRUE(testing::all_close(gpu.cpu(), cpu, 1e-4, 1e-5));
  }
}

// CUDA's dropout masks are its own (not the CPU's): the second derivative of dropout(x)^2 is
// 2 u v m^2 with m the mask dropout(ones) draws on the device from the same seed.
TEST(DoubleBackwardCuda, DropoutSecondDerivativeIsItsMaskSquared) {
  SKIP_WITHOUT_CUDA();
  const auto seeded_dropout = [](const Tensor& t) {
    manual_seed(7);
    return dropout(t, 0.4, /*training=*/true);
  };
  const Tensor h = second_derivative([&](const Tensor& t) { return square(seeded_dropout(t)); },
                                     testing::wiggly({2, 4}, 0.0), kGpu);
  const Tensor m = seeded_dropout(ones({2, 4}, TensorOptions().device(kGpu))).cpu();
  const Tensor expected = 2.0 * testing::wiggly({2, 4}, 2.0) * testing::wiggly({2, 4}, 3.0) * m * m;
  EXPECT_TRUE(testing::all_close(h.cpu(), expected, 1e-5, 1e-6));
}

}  // namespace
}  // namespace minidl
