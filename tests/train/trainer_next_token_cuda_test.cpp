// train::Trainer with the NextToken objective on a GPU: the step captured in a CUDA graph (the
// objective cuts the windows inside it) ends where eager steps do, in float32 and bfloat16; and a
// CUDA run ends close to a CPU run of the same steps (CPU/CUDA parity). The model is a stand-in
// with a GPT's interface (tokens [B, T] -> logits [B, T, V]). Skipped without a GPU.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "minidl/data/dataloader.h"
#include "minidl/data/datasets/token_window_dataset.h"
#include "minidl/nn/nn.h"
#include "minidl/ops/random.h"
#include "minidl/optim/optim.h"
#include "minidl/train/trainer.h"
#include "test_util.h"

namespace minidl::train {
namespace {

constexpr int64_t kVocab = 16;
constexpr int64_t kBlock = 8;
constexpr int64_t kBatch = 8;
constexpr int64_t kStepsPerEpoch = 10;
constexpr int64_t kEpochs = 2;

// A walk over the vocabulary by steps of 1 or 3: mostly predictable.
std::vector<uint16_t> walk_tokens(int64_t count) {
  std::vector<uint16_t> tokens;
  int64_t token = 0;
  for (int64_t i = 0; i < count; ++i) {
    tokens.push_back(static_cast<uint16_t>(token));
    token = (token + ((i * 7) % 3 == 0 ? 3 : 1)) % kVocab;
  }
  return tokens;
}

struct Outcome {
  TrainingResult result;
  std::vector<Tensor> state;  // on the CPU
};

Outcome train(const Device& device, TrainerOptions options) {
  manual_seed(11);
  nn::Sequential model{nn::Embedding(kVocab, 16), nn::Linear(16, kVocab)};
  model->to(device);
  optim::AdamW optimizer(model->parameters(), optim::AdamWOptions(5e-2).betas({0.9, 0.99}));
  optim::WarmupCosineLR schedule(optimizer, 3, kEpochs * kStepsPerEpoch, 5e-3);
  auto train_set = std::make_shared<data::TokenWindowDataset>(
      walk_tokens(4000),
      data::TokenWindowOptions(kBlock).seed(5).epoch_size(kStepsPerEpoch * kBatch));
  auto val_set = std::make_shared<data::TokenWindowDataset>(
      walk_tokens(600),
      data::TokenWindowOptions(kBlock).placement(data::WindowPlacement::Consecutive));
  data::DataLoader train_loader(train_set, data::DataLoaderOptions(kBatch).device(device));
  data::DataLoader test_loader(val_set, data::DataLoaderOptions(kBatch).device(device));
  Trainer trainer(model, optimizer, train_loader, test_loader,
                  options.epochs(kEpochs)
                      .objective(std::make_shared<NextToken>())
                      .eval_batches(2)
                      .clip_grad_norm(1.0)
                      .progress(ProgressMode::kNone)
                      .handle_signals(false));
  trainer.set_scheduler(&schedule);
  Outcome outcome{trainer.fit(), {}};
  for (const auto& item : model->state_dict()) outcome.state.push_back(item.value().to(kCPU));
  return outcome;
}

void expect_close_outcomes(const Outcome& actual, const Outcome& expected, double tolerance) {
  ASSERT_EQ(actual.state.size(), expected.state.size());
  for (size_t i = 0; i < expected.state.size(); ++i)
    EXPECT_TRUE(testing::all_close(actual.state[i], expected.state[i], tolerance, tolerance))
        << "state entry " << i;
  ASSERT_EQ(actual.result.history.size(), expected.result.history.size());
  for (size_t e = 0; e < expected.result.history.size(); ++e) {
    EXPECT_NEAR(actual.result.history[e].train_loss, expected.result.history[e].train_loss,
                tolerance);
    EXPECT_NEAR(actual.result.history[e].test_loss, expected.result.history[e].test_loss,
                tolerance);
  }
  EXPECT_EQ(actual.result.steps, expected.result.steps);
  EXPECT_EQ(actual.result.test.units, expected.result.test.units);
}

class TrainerNextTokenCuda : public ::testing::TestWithParam<DType> {};

TEST_P(TrainerNextTokenCuda, ReplayedStepsEndWhereEagerStepsDo) {
  SKIP_WITHOUT_CUDA();
  const Device gpu(kCUDA, 0);
  const Outcome eager = train(gpu, TrainerOptions().precision(GetParam()).cuda_graph(false));
  const Outcome graphed = train(gpu, TrainerOptions().precision(GetParam()).cuda_graph(true));
  EXPECT_EQ(eager.result.graph_replays, 0);
  EXPECT_EQ(graphed.result.graph_replays, kEpochs * kStepsPerEpoch - kGraphWarmupSteps);
  expect_close_outcomes(graphed, eager, 1e-5);
  EXPECT_LT(graphed.result.test.loss, eager.result.history.front().test_loss + 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Precisions, TrainerNextTokenCuda, ::testing::Values(kFloat32, kBFloat16),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(dtype_name(info.param));
                         });

TEST(TrainerNextTokenCuda, ACudaRunEndsCloseToTheCpuRun) {
  SKIP_WITHOUT_CUDA();
  const Outcome cpu = train(Device(kCPU), TrainerOptions());
  const Outcome gpu = train(Device(kCUDA, 0), TrainerOptions().cuda_graph(false));
  expect_close_outcomes(gpu, cpu, 1e-4);
  EXPECT_GT(gpu.result.tokens_trained, 0);
}

}  // namespace
}  // namespace minidl::train
