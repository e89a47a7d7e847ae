// The losses of ops/pointwise_loss.h, the weighted nll_loss, F::normalize, the loss modules and
// nn::init::trunc_normal_ on a GPU: the CPU's values and gradients (float32, every reduction),
// 16-bit inputs under autocast computed in float32, binary_cross_entropy refused under CUDA
// autocast as PyTorch refuses it, modules with weight buffers moved to the GPU, and the same
// truncated-normal values for a seed. Skipped without a GPU.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "minidl/core/autocast.h"
#include "minidl/nn/nn.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/pointwise_loss.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

namespace F = nn::functional;
using testing::all_close;
using testing::wiggly;

const Device kGpu(kCUDA, 0);

// A loss of (input, target, extra tensors) under a reduction.
using LossOf = std::function<Tensor(const Tensor& input, const Tensor& target,
                                    const std::vector<Tensor>& extra, Reduction reduction)>;

// The loss on the CPU and on the GPU, from the same float32 values: outputs and the input's and
// target's gradients agree to float32 rounding (the GPU sums in another order).
void expect_parity(const std::string& what, const Tensor& input, const Tensor& target,
                   const std::vector<Tensor>& extra, const LossOf& loss,
                   bool target_differentiable = true) {
  for (Reduction reduction : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    const Tensor cpu_input = input.detach().requires_grad_(true);
    const Tensor cpu_target = target.detach().requires_grad_(target_differentiable);
    const Tensor gpu_input = input.to(kGpu).requires_grad_(true);
    const Tensor gpu_target = target.to(kGpu).requires_grad_(target_differentiable);
    std::vector<Tensor> gpu_extra;
    for (const Tensor& t : extra) gpu_extra.push_back(t.defined() ? t.to(kGpu) : t);
    const Tensor cpu_out = loss(cpu_input, cpu_target, extra, reduction);
    const Tensor gpu_out = loss(gpu_input, gpu_target, gpu_extra, reduction);
    ASSERT_TRUE(gpu_out.is_cuda()) << what;
    EXPECT_TRUE(all_close(gpu_out.cpu(), cpu_out, 1e-5, 1e-5)) << what;
    sum(cpu_out).backward();
    sum(gpu_out).backward();
    EXPECT_TRUE(all_close(gpu_input.grad().cpu(), cpu_input.grad(), 1e-5, 1e-5)) << what;
    if (target_differentiable)
      EXPECT_TRUE(all_close(gpu_target.grad().cpu(), cpu_target.grad(), 1e-5, 1e-5)) << what;
  }
}

Tensor probabilities(const Shape& sizes, double phase) {
  return wiggly(sizes, kFloat32, testing::Wiggle{.phase = phase, .amplitude = 0.45, .offset = 0.5});
}

TEST(LossCuda, EveryLossMatchesTheCpu) {
  SKIP_WITHOUT_CUDA();
  const Tensor logits = wiggly({64, 5}, kFloat32, testing::Wiggle{.amplitude = 6});
  const Tensor target = probabilities({64, 5}, 0.9);
  const Tensor class_weight = probabilities({5}, 0.2);
  const Tensor pos_weight = add(probabilities({5}, 1.7), 1.0);
  expect_parity("bce_with_logits", logits, target, {class_weight, pos_weight},
                [](const Tensor& x, const Tensor& y, const std::vector<Tensor>& w, Reduction r) {
                  return binary_cross_entropy_with_logits(x, y, w[0], w[1], r);
                });
  expect_parity("bce", sigmoid(logits), target, {class_weight},
                [](const Tensor& x, const Tensor& y, const std::vector<Tensor>& w, Reduction r) {
                  return binary_cross_entropy(x, y, w[0], r);
                });
  const Tensor prediction = wiggly({64, 5}, kFloat32, testing::Wiggle{.amplitude = 2});
  const Tensor truth = wiggly({64, 5}, kFloat32, testing::Wiggle{.phase = 1.3, .amplitude = 1.5});
  for (double beta : {0.0, 0.5, 1.0})
    expect_parity("smooth_l1", prediction, truth, {},
                  [beta](const Tensor& x, const Tensor& y, const std::vector<Tensor>&,
                         Reduction r) { return smooth_l1_loss(x, y, r, beta); });
  expect_parity("l1", prediction, truth, {},
                [](const Tensor& x, const Tensor& y, const std::vector<Tensor>&, Reduction r) {
                  return l1_loss(x, y, r);
                });
  // Ties (input == target), where both devices give the gradient 0, as PyTorch's.
  expect_parity("l1 ties", prediction, where(prediction > 0.5, prediction, truth), {},
                [](const Tensor& x, const Tensor& y, const std::vector<Tensor>&, Reduction r) {
                  return l1_loss(x, y, r);
                });
  expect_parity("huber", prediction, truth, {},
                [](const Tensor& x, const Tensor& y, const std::vector<Tensor>&, Reduction r) {
                  return huber_loss(x, y, r, 0.8);
                });
  const Tensor log_probs = log_softmax(logits, 1);
  for (bool log_target : {false, true})
    expect_parity(
        "kl_div", log_probs, log_target ? log_softmax(truth, 1) : softmax(truth, 1), {},
        [log_target](const Tensor& x, const Tensor& y, const std::vector<Tensor>&, Reduction r) {
          const KLDivReduction reduction = r == Reduction::None  ? KLDivReduction::None
                                           : r == Reduction::Sum ? KLDivReduction::Sum
                                                                 : KLDivReduction::BatchMean;
          return kl_div(x, y, reduction, log_target);
        });
  std::vector<int64_t> classes(64);
  for (size_t i = 0; i < classes.size(); ++i) classes[i] = i % 7 == 3 ? -100 : (i * 3) % 5;
  expect_parity(
      "nll_loss", log_probs, tensor(classes, {64}), {class_weight},
      [](const Tensor& x, const Tensor& y, const std::vector<Tensor>& w, Reduction r) {
        return F::nll_loss(x, y, F::NLLLossFuncOptions().weight(w[0]).reduction(r));
      },
      /*target_differentiable=*/false);
  expect_parity("normalize", prediction, truth, {},
                [](const Tensor& x, const Tensor& y, const std::vector<Tensor>&, Reduction) {
                  return mul(F::normalize(x), y);
                });
}

TEST(LossCuda, AutocastRunsLossesInFloat32AndRefusesBinaryCrossEntropy) {
  SKIP_WITHOUT_CUDA();
  const Tensor logits = wiggly({8, 3}, 0.0, kFloat16).to(kGpu);
  const Tensor target = probabilities({8, 3}, 0.4).to(kFloat16).to(kGpu);
  amp::AutocastGuard autocast(kFloat16);
  EXPECT_EQ(binary_cross_entropy_with_logits(logits, target).dtype(), kFloat32);
  EXPECT_EQ(smooth_l1_loss(logits, target).dtype(), kFloat32);
  EXPECT_EQ(huber_loss(logits, target).dtype(), kFloat32);
  EXPECT_EQ(l1_loss(logits, target).dtype(), kFloat32);
  EXPECT_EQ(kl_div(logits, target).dtype(), kFloat32);
  EXPECT_ERROR_CONTAINS(binary_cross_entropy(sigmoid(logits), target),
                        "binary_cross_entropy: unsafe to autocast");
}

TEST(LossCuda, ModulesMoveTheirWeightsToTheGpu) {
  SKIP_WITHOUT_CUDA();
  const Tensor logits = wiggly({6, 4});
  const Tensor target = probabilities({6, 4}, 0.3);
  nn::BCEWithLogitsLoss loss(
      nn::BCEWithLogitsLossOptions().weight(probabilities({4}, 0.1)).pos_weight(full({4}, 2.0)));
  const Tensor on_cpu = loss(logits, target);
  loss->to(kGpu);
  EXPECT_TRUE(loss->options.weight().is_cuda());
  EXPECT_TRUE(loss->options.pos_weight().is_cuda());
  EXPECT_TRUE(all_close(loss(logits.to(kGpu), target.to(kGpu)).cpu(), on_cpu, 1e-6, 1e-6));
  nn::NLLLoss nll(nn::NLLLossOptions().weight(tensor({1.0, 2.0, 0.5, 3.0})));
  const Tensor classes = tensor(std::vector<int64_t>{0, 1, 2, 3, 1, 0}, {6});
  const Tensor nll_on_cpu = nll(log_softmax(logits, 1), classes);
  nll->to(kGpu);
  EXPECT_TRUE(all_close(nll(log_softmax(logits.to(kGpu), 1), classes.to(kGpu)).cpu(), nll_on_cpu,
                        1e-6, 1e-6));
  nn::Softmax softmax_module(1);
  EXPECT_TRUE(all_close(softmax_module(logits.to(kGpu)).cpu(), softmax(logits, 1), 1e-6, 1e-6));
}

TEST(LossCuda, TruncNormalGivesTheCpusValuesForASeed) {
  SKIP_WITHOUT_CUDA();
  manual_seed(11);
  Tensor on_cpu = empty({3, 700});
  nn::init::trunc_normal_(on_cpu, 0.1, 0.5, -0.6, 0.9);
  manual_seed(11);
  Tensor on_gpu = empty({3, 700}, TensorOptions(kFloat32).device(kGpu));
  nn::init::trunc_normal_(on_gpu, 0.1, 0.5, -0.6, 0.9);
  EXPECT_TRUE(testing::bitwise_equal(on_gpu.cpu(), on_cpu));
}

}  // namespace
}  // namespace minidl
