// models::GPT: nanoGPT's names, sizes and tied head, the initialisation, forward shapes and
// causality, the loss, generation, a safetensors round trip, and a few steps of learning.
#include "minidl/models/gpt.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "minidl/core/autocast.h"
#include "minidl/nn/serialize.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "minidl/optim/adam.h"
#include "model_test_util.h"
#include "scratch_directory.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::parameter_count;

models::GPTOptions tiny(bool bias = true) {
  return models::GPTOptions().vocab_size(11).block_size(8).n_layer(2).n_head(2).n_embd(8).bias(
      bias);
}

// The recipe's default model (train_gpt's): about 0.8M parameters.
models::GPTOptions recipe() {
  return models::GPTOptions().vocab_size(256).block_size(128).n_layer(4).n_head(4).n_embd(128).bias(
      false);
}

Tensor tokens(const std::vector<int64_t>& values, const Shape& sizes) {
  return tensor(values, sizes);
}

TEST(GPT, ParameterCountsOfTheRecipeAndOfGPT2Small) {
  // Per block 12 n_embd^2 (+ biases), the embeddings, ln_f; the head is the token embedding.
  EXPECT_EQ(parameter_count(*models::GPT(recipe())), 836736);
  EXPECT_EQ(parameter_count(*models::GPT(recipe().bias(true))), 842496);
  EXPECT_EQ(models::GPT(recipe())->num_params(), 836736 - 128 * 128);
  // nanoGPT's shakespeare-char on bytes (tools/bench --gpt-shape shakespeare-char; PyTorch's
  // twin asserts the same count).
  EXPECT_EQ(
      parameter_count(*models::GPT(recipe().block_size(256).n_layer(6).n_head(6).n_embd(384))),
      10818432);
}

TEST(GPT, StateDictHasNanoGPTsNamesAndTheTiedHeadTwice) {
  models::GPT gpt(tiny().n_layer(1));
  std::vector<std::string> names;
  for (const auto& item : gpt->state_dict()) names.push_back(item.key());
  EXPECT_EQ(names, (std::vector<std::string>{
                       "transformer.wte.weight",
                       "transformer.wpe.weight",
                       "transformer.h.0.ln_1.weight",
                       "transformer.h.0.ln_1.bias",
                       "transformer.h.0.attn.c_attn.weight",
                       "transformer.h.0.attn.c_attn.bias",
                       "transformer.h.0.attn.c_proj.weight",
                       "transformer.h.0.attn.c_proj.bias",
                       "transformer.h.0.ln_2.weight",
                       "transformer.h.0.ln_2.bias",
                       "transformer.h.0.mlp.c_fc.weight",
                       "transformer.h.0.mlp.c_fc.bias",
                       "transformer.h.0.mlp.c_proj.weight",
                       "transformer.h.0.mlp.c_proj.bias",
                       "transformer.ln_f.weight",
                       "transformer.ln_f.bias",
                       "lm_head.weight",
                   }));
  // One tensor under two names; parameters() has it once, as PyTorch's.
  EXPECT_TRUE(gpt->lm_head->weight.is_same(gpt->wte->weight));
  EXPECT_EQ(gpt->parameters().size(), names.size() - 1);
  std::vector<std::string> unbiased;
  for (const auto& item : models::GPT(tiny(false).n_layer(1))->named_parameters())
    unbiased.push_back(item.key());
  EXPECT_EQ(unbiased.size(), 9u);  // wte wpe ln_1 c_attn c_proj ln_2 c_fc c_proj ln_f
}

TEST(GPT, InitialisationIsGPT2s) {
  manual_seed(7);
  models::GPT gpt(recipe());
  auto std_of = [](const Tensor& t) {
    const Tensor centred = t - mean(t);
    return std::sqrt(mean(centred * centred).item<double>());
  };
  EXPECT_NEAR(std_of(gpt->wte->weight), 0.02, 0.002);
  const auto& block = gpt->h->at<models::BlockImpl>(0);
  EXPECT_NEAR(std_of(block.attn->c_attn->weight), 0.02, 0.002);
  // The residual projections: 0.02 / sqrt(2 n_layer) = 0.00707.
  EXPECT_NEAR(std_of(block.attn->c_proj->weight), 0.02 / std::sqrt(8.0), 0.001);
  EXPECT_NEAR(std_of(block.mlp->c_proj->weight), 0.02 / std::sqrt(8.0), 0.001);
  EXPECT_EQ(min(block.ln_1->weight).item<float>(), 1.0f);
  const models::GPT biased(tiny());
  const auto& biased_block = biased->h->at<models::BlockImpl>(0);
  EXPECT_EQ(max(abs(biased_block.mlp->c_fc->bias)).item<float>(), 0.0f);
}

TEST(GPT, ForwardIsCausalAndChecksItsInput) {
  manual_seed(1);
  models::GPT gpt(tiny());
  gpt->eval();
  Tensor idx = tokens({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {2, 5});
  Tensor logits = gpt(idx);
  EXPECT_EQ(logits.sizes(), (Shape{2, 5, 11}));
  // Changing a later token leaves the logits of the earlier positions as they were.
  Tensor changed = tokens({1, 2, 3, 0, 5, 6, 7, 8, 9, 10}, {2, 5});
  Tensor changed_logits = gpt(changed);
  EXPECT_TRUE(all_close(changed_logits.narrow(1, 0, 3), logits.narrow(1, 0, 3), 1e-6, 1e-6));
  EXPECT_FALSE(all_close(changed_logits.narrow(1, 3, 1), logits.narrow(1, 3, 1), 1e-6, 1e-6));
  EXPECT_ERROR_CONTAINS(gpt(zeros({1, 9}, kInt64)),
                        "GPT: cannot forward a sequence of length 9, block_size is only 8");
  EXPECT_ERROR_CONTAINS(gpt(zeros({9}, kInt64)), "GPT: expected token indices [B, T], got [9]");
  EXPECT_ERROR_CONTAINS(models::GPT(tiny().n_head(3)),
                        "GPT: n_embd (8) must be a multiple of "
                        "n_head (3)");
}

TEST(GPT, LossIsTheMeanCrossEntropyOfTheNextTokensIgnoringMinusOne) {
  manual_seed(2);
  models::GPT gpt(tiny());
  Tensor idx = tokens({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor targets = tokens({2, 3, 4, 5, 6, -1}, {2, 3});
  Tensor logits = gpt(idx);
  const double loss = models::GPTImpl::loss(logits, targets).item<double>();
  // By hand: the mean of -log softmax over the five counted positions.
  const Tensor log_probs = log_softmax(logits.reshape({6, 11}), 1);
  const std::vector<float> values = to_vector<float>(log_probs);
  const std::vector<int64_t> wanted = {2, 3, 4, 5, 6};
  double total = 0;
  for (size_t i = 0; i < wanted.size(); ++i) total -= values[i * 11 + wanted[i]];
  EXPECT_NEAR(loss, total / 5, 1e-6);
  // An untrained model is close to uniform: about ln 11.
  EXPECT_NEAR(loss, std::log(11.0), 0.1);
}

TEST(GPT, GenerateAppendsTokensRepeatablyAndTopOneIsGreedy) {
  manual_seed(3);
  models::GPT gpt(tiny());
  Tensor prompt = tokens({1, 2, 3}, {1, 3});
  manual_seed(11);
  Tensor first = gpt->generate(prompt, 12, 0.8, 5);
  manual_seed(11);
  Tensor second = gpt->generate(prompt, 12, 0.8, 5);
  EXPECT_EQ(first.sizes(), (Shape{1, 15}));  // longer than block_size: the context is cropped
  EXPECT_TRUE(testing::bitwise_equal(first, second));
  EXPECT_EQ(to_vector<int64_t>(first.narrow(1, 0, 3)), (std::vector<int64_t>{1, 2, 3}));
  for (int64_t token : to_vector<int64_t>(first)) {
    EXPECT_GE(token, 0);
    EXPECT_LT(token, 11);
  }
  EXPECT_TRUE(gpt->is_training());  // generate restores the mode
  // top_k = 1 takes the most likely token each time.
  Tensor greedy = gpt->generate(prompt, 1, 1.0, 1);
  gpt->eval();
  const int64_t expected = argmax(gpt(prompt).select(1, -1), 1).item<int64_t>();
  EXPECT_EQ(to_vector<int64_t>(greedy)[3], expected);
  EXPECT_ERROR_CONTAINS(gpt->generate(prompt, 1, 0.0), "GPT::generate: expected temperature > 0");
}

TEST(GPT, SafetensorsRoundTripKeepsTheTiedWeight) {
  testing::ScratchDirectory scratch("gpt_round_trip");
  manual_seed(4);
  models::GPT saved(tiny());
  const std::filesystem::path path = scratch.path() / "gpt.safetensors";
  nn::save(saved, path);
  manual_seed(5);
  models::GPT loaded(tiny());
  nn::load(loaded, path);
  saved->eval();
  loaded->eval();
  Tensor idx = tokens({1, 2, 3, 4}, {1, 4});
  EXPECT_TRUE(testing::bitwise_equal(loaded(idx), saved(idx)));
  EXPECT_TRUE(loaded->lm_head->weight.is_same(loaded->wte->weight));
}

TEST(GPT, LearnsARepeatedSequence) {
  manual_seed(6);
  models::GPT gpt(tiny(false));
  optim::AdamW optimizer(gpt->parameters(), optim::AdamWOptions(1e-2).weight_decay(0.0));
  Tensor idx = tokens({1, 2, 3, 4, 5, 6, 7, 8, 2, 3, 4, 5, 6, 7, 8, 9}, {2, 8});
  Tensor targets = tokens({2, 3, 4, 5, 6, 7, 8, 9, 3, 4, 5, 6, 7, 8, 9, 10}, {2, 8});
  double first = 0, last = 0;
  for (int step = 0; step < 100; ++step) {
    optimizer.zero_grad();
    Tensor loss = models::GPTImpl::loss(gpt(idx), targets);
    loss.backward();
    optimizer.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_GT(first, 2.0);
  EXPECT_LT(last, 0.5);
}

// Mixed precision as train_gpt --precision bf16|fp16 runs it: the 16-bit branches join the
// float32 residual stream, the loss is float32 and close to the float32 forward's, and every
// parameter gets a float32 gradient.
TEST(GPT, TrainsUnderAutocastWithAFloat32ResidualStream) {
  for (const DType precision : {kBFloat16, kFloat16}) {
    SCOPED_TRACE(dtype_name(precision));
    manual_seed(6);
    models::GPT gpt(tiny(true));
    Tensor idx = tokens({1, 2, 3, 4, 5, 6, 7, 8, 2, 3, 4, 5, 6, 7, 8, 9}, {2, 8});
    Tensor targets = tokens({2, 3, 4, 5, 6, 7, 8, 9, 3, 4, 5, 6, 7, 8, 9, 10}, {2, 8});
    const double float32_loss = models::GPTImpl::loss(gpt(idx), targets).item<double>();
    Tensor loss;
    {
      amp::AutocastGuard autocast(precision);
      loss = models::GPTImpl::loss(gpt(idx), targets);
    }
    EXPECT_EQ(loss.dtype(), kFloat32);
    EXPECT_NEAR(loss.item<double>(), float32_loss, 0.05);
    loss.backward();
    for (const Tensor& parameter : gpt->parameters()) {
      ASSERT_TRUE(parameter.grad().defined());
      EXPECT_EQ(parameter.grad().dtype(), kFloat32);
    }
  }
}

}  // namespace
}  // namespace minidl
