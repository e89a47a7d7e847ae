// The exactness target of issue 28: from the same weights and batches, minidl's first 20 float32
// training steps of train_gpt's default GPT on the CPU give PyTorch's losses to 1e-4 relative.
// Weights and batches come from formulas that tools/reference/make_gpt_reference.py uses too, so
// the test needs no files; PyTorch's numbers are in gpt_reference.h.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gpt_reference.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/models/gpt.h"
#include "minidl/nn/utils/clip_grad.h"
#include "minidl/optim/adam.h"
#include "model_test_util.h"
#include "test_util.h"

namespace minidl {
namespace {

constexpr int64_t kBatch = 32, kBlock = 128, kStreamLength = 100000;

models::GPTOptions recipe() {
  return models::GPTOptions()
      .vocab_size(256)
      .block_size(kBlock)
      .n_layer(4)
      .n_head(4)
      .n_embd(128)
      .bias(false);
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Parameter j (named_parameters order), element k: 1 + 0.05 sin(a) for the LayerNorm weights,
// 0.02 sin(a) for the others, a = 0.001 k^2 + 0.37 k + 1.1 j (the k^2 term makes every weight
// matrix full-rank: with a linear phase each would be rank 2, and the degenerate network
// amplified rounding differences from step 6 on); in float64, rounded to float32.
void set_formula_weights(models::GPTImpl& gpt) {
  NoGradGuard no_grad;
  int64_t j = 0;
  for (const auto& item : gpt.named_parameters()) {
    const bool norm_weight = ends_with(item.key(), "ln_1.weight") ||
                             ends_with(item.key(), "ln_2.weight") ||
                             ends_with(item.key(), "ln_f.weight");
    std::vector<double> values(static_cast<size_t>(item.value().numel()));
    for (size_t k = 0; k < values.size(); ++k) {
      const auto kd = static_cast<double>(k);
      const double wave = std::sin(0.001 * kd * kd + 0.37 * kd + 1.1 * static_cast<double>(j));
      values[k] = norm_weight ? 1 + 0.05 * wave : 0.02 * wave;
    }
    Tensor parameter = item.value();
    parameter.copy_(from_host(values.data(), parameter.sizes(), kFloat64));
    ++j;
  }
}

// Step s's batch: rows of the stream data[i] = (7 i^2 + 13 i + 5) mod 251 from
// start = ((32 s + b) * 9973) mod (100000 - 129); targets shifted by one.
std::pair<Tensor, Tensor> formula_batch(int64_t step) {
  std::vector<int64_t> inputs, targets;
  auto data = [](int64_t i) { return (i * i * 7 + i * 13 + 5) % 251; };
  for (int64_t b = 0; b < kBatch; ++b) {
    const int64_t start = ((step * kBatch + b) * 9973) % (kStreamLength - kBlock - 1);
    for (int64_t t = 0; t < kBlock; ++t) {
      inputs.push_back(data(start + t));
      targets.push_back(data(start + t + 1));
    }
  }
  return {tensor(inputs, {kBatch, kBlock}), tensor(targets, {kBatch, kBlock})};
}

// nanoGPT's get_lr with learning_rate 1e-3, warmup_iters 100, lr_decay_iters 2000, min_lr 1e-4.
double nanogpt_lr(int64_t it) {
  const double lr = 1e-3, min_lr = 1e-4;
  const int64_t warmup = 100, decay = 2000;
  if (it < warmup) return lr * static_cast<double>(it + 1) / static_cast<double>(warmup + 1);
  if (it > decay) return min_lr;
  const double ratio = static_cast<double>(it - warmup) / static_cast<double>(decay - warmup);
  return min_lr + 0.5 * (1.0 + std::cos(M_PI * ratio)) * (lr - min_lr);
}

TEST(GPTExactness, FirstTwentyFloat32StepsMatchPyTorch) {
  const testing::ScopedThreadCount threads(2);
  models::GPT gpt(recipe());
  EXPECT_EQ(testing::parameter_count(*gpt), testing::kGptReferenceParameterCount);
  set_formula_weights(*gpt);

  // nanoGPT's configure_optimizers: decay for the matrices, none for the rest.
  std::vector<Tensor> decayed, not_decayed;
  for (const Tensor& parameter : gpt->parameters())
    (parameter.dim() >= 2 ? decayed : not_decayed).push_back(parameter);
  const auto options = optim::AdamWOptions(1e-3).betas({0.9, 0.99}).eps(1e-8);
  optim::AdamW optimizer(
      {optim::OptimizerParamGroup(decayed, optim::AdamWOptions(options).weight_decay(0.1)),
       optim::OptimizerParamGroup(not_decayed, optim::AdamWOptions(options).weight_decay(0.0))},
      options);

  for (int64_t step = 0; step < testing::kGptReferenceSteps; ++step) {
    auto [inputs, targets] = formula_batch(step);
    Tensor loss = models::GPTImpl::loss(gpt(inputs), targets);
    const double expected = testing::kGptReferenceLosses[step];
    EXPECT_NEAR(loss.item<double>(), expected, 1e-4 * std::abs(expected)) << "step " << step;
    loss.backward();
    const double norm = nn::utils::clip_grad_norm_(gpt->parameters(), 1.0).item<double>();
    if (step == 0)
      EXPECT_NEAR(norm, testing::kGptReferenceGradNormBeforeClip,
                  1e-4 * testing::kGptReferenceGradNormBeforeClip);
    EXPECT_DOUBLE_EQ(nanogpt_lr(step), testing::kGptReferenceLearningRates[step]);
    for (optim::OptimizerParamGroup& group : optimizer.param_groups())
      group.options().set_lr(nanogpt_lr(step));
    optimizer.step();
    optimizer.zero_grad();
  }
}

}  // namespace
}  // namespace minidl
