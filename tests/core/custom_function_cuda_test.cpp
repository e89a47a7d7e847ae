// A custom autograd::Function built from minidl's ops runs on CUDA as on the CPU: the same
// values and gradients (float32), and autograd::grad on a CUDA graph.
#include <gtest/gtest.h>

#include <any>
#include <vector>

#include "minidl/core/autograd/custom_function.h"
#include "minidl/core/autograd/engine.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/linalg.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

using autograd::AutogradContext;
using autograd::variable_list;

const Device kGpu(kCUDA, 0);

// y = tanh(x w^T) * k with a hand-written backward.
struct ScaledTanhLinear : autograd::Function<ScaledTanhLinear> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& w, double k) {
    Tensor out = tanh(linear(x, w));
    ctx->save_for_backward({x, w, out});
    ctx->saved_data["k"] = k;
    return out * k;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    const double k = std::any_cast<double>(ctx->saved_data.at("k"));
    const Tensor pre = grad_outputs[0] * (1.0 - saved[2] * saved[2]) * k;
    return {matmul(pre, saved[1]), matmul(pre.t(), saved[0]), Tensor()};
  }
};

TEST(CustomFunctionCuda, SameValuesAndGradientsAsTheCpu) {
  SKIP_WITHOUT_CUDA();
  const Tensor x = testing::wiggly({5, 4}, 0.0);
  const Tensor w = testing::wiggly({3, 4}, 1.0);
  const Tensor weights = testing::wiggly({5, 3}, 2.0);
  std::vector<std::vector<Tensor>> results;
  for (Device device : {Device(kCPU), kGpu}) {
    // detach(): on the CPU to() returns `x` itself, which must stay a tensor without grad for
    // the GPU's turn.
    Tensor dx = x.detach().to(device).requires_grad_(true);
    Tensor dw = w.detach().to(device).requires_grad_(true);
    Tensor y = ScaledTanhLinear::apply(dx, dw, 1.5);
    // The graph is kept for autograd::grad below (PyTorch's retain_graph=True).
    sum(y * weights.to(device)).backward({}, /*retain_graph=*/true);
    std::vector<Tensor> grads = autograd::grad({sum(exp(y))}, {dx, dw});
    results.push_back({y.cpu(), dx.grad().cpu(), dw.grad().cpu(), grads[0].cpu(), grads[1].cpu()});
  }
  for (size_t i = 0; i < results[0].size(); ++i)
    EXPECT_TRUE(testing::all_close(results[1][i], results[0][i], 1e-5, 1e-5)) << "result " << i;
}

}  // namespace
}  // namespace minidl
