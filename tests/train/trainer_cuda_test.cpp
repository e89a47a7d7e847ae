// train::Trainer on a GPU with its step in a CUDA graph (TrainerOptions::cuda_graph):
// the same weights and metrics as eager steps, with a last, smaller batch per epoch (run eagerly
// between replays), batch norm, a schedule, and float16 with a GradScaler; and a model with
// dropout trains eagerly. Skipped without a GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "minidl/data/dataloader.h"
#include "minidl/data/datasets/synthetic_dataset.h"
#include "minidl/nn/nn.h"
#include "minidl/ops/conv.h"
#include "minidl/ops/random.h"
#include "minidl/optim/optim.h"
#include "minidl/train/trainer.h"
#include "test_util.h"

namespace minidl::train {
namespace {

constexpr int64_t kBatchSize = 32;
constexpr int64_t kTrainSize = 240;  // 7 full batches and one of 16 per epoch
constexpr int64_t kEpochs = 2;

struct Outcome {
  TrainingResult result;
  std::vector<Tensor> state;  // the model's parameters and buffers at the end, on the CPU
};

Outcome train(TrainerOptions options, bool with_dropout = false) {
  const Device gpu(kCUDA, 0);
  manual_seed(7);
  nn::Sequential model{nn::Conv2d(1, 4, 3),
                       nn::BatchNorm2d(4),
                       nn::ReLU(),
                       nn::Flatten(),
                       nn::Dropout(nn::DropoutOptions(with_dropout ? 0.25 : 0.0)),
                       nn::Linear(4 * 12 * 12, 10)};
  model->to(gpu);
  optim::SGD optimizer(model->parameters(),
                       optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(1e-4));
  optim::CosineAnnealingLR schedule(optimizer, 2 * kEpochs * (kTrainSize / kBatchSize + 1));
  const auto normalize = data::AugmentOptions().normalize({0.5f}, {0.25f});
  data::DataLoader train_loader(
      data::make_synthetic_dataset(kTrainSize, {1, 14, 14}, 10, 1),
      data::DataLoaderOptions(kBatchSize).shuffle(true).seed(3).device(gpu).augment(normalize));
  data::DataLoader test_loader(data::make_synthetic_dataset(100, {1, 14, 14}, 10, 2),
                               data::DataLoaderOptions(64).device(gpu).augment(normalize));
  Trainer trainer(model, optimizer, train_loader, test_loader,
                  options.epochs(kEpochs).progress(ProgressMode::kNone).handle_signals(false));
  trainer.set_scheduler(&schedule);
  Outcome outcome{trainer.fit(), {}};
  for (const auto& item : model->state_dict()) outcome.state.push_back(item.value().to(kCPU));
  return outcome;
}

void expect_close_outcomes(const Outcome& graphed, const Outcome& eager) {
  ASSERT_EQ(graphed.state.size(), eager.state.size());
  for (size_t i = 0; i < eager.state.size(); ++i)
    EXPECT_TRUE(testing::all_close(graphed.state[i], eager.state[i], 1e-5, 1e-5))
        << "state entry " << i;
  ASSERT_EQ(graphed.result.history.size(), eager.result.history.size());
  for (size_t e = 0; e < eager.result.history.size(); ++e) {
    EXPECT_NEAR(graphed.result.history[e].train_loss, eager.result.history[e].train_loss, 1e-5);
    EXPECT_NEAR(graphed.result.history[e].test_loss, eager.result.history[e].test_loss, 1e-5);
    EXPECT_EQ(graphed.result.history[e].lr, eager.result.history[e].lr);
  }
  EXPECT_EQ(graphed.result.steps, eager.result.steps);
}

class TrainerCuda : public ::testing::TestWithParam<DType> {};

TEST_P(TrainerCuda, ReplayedStepsEndWhereEagerStepsDo) {
  SKIP_WITHOUT_CUDA();
  testing::DeterministicConvolutions deterministic;
  const Outcome eager = train(TrainerOptions().precision(GetParam()).cuda_graph(false));
  const Outcome graphed = train(TrainerOptions().precision(GetParam()).cuda_graph(true));
  EXPECT_EQ(eager.result.graph_replays, 0);
  // Per epoch 7 full batches and a small one; the first 2 full batches warm up.
  EXPECT_EQ(graphed.result.graph_replays, kEpochs * 7 - kGraphWarmupSteps);
  expect_close_outcomes(graphed, eager);
}

INSTANTIATE_TEST_SUITE_P(Precisions, TrainerCuda, ::testing::Values(kFloat32, kFloat16),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(dtype_name(info.param));
                         });

TEST(TrainerCudaGraph, AModelWithDropoutTrainsEagerly) {
  SKIP_WITHOUT_CUDA();
  const Outcome outcome = train(TrainerOptions(), /*with_dropout=*/true);
  EXPECT_EQ(outcome.result.graph_replays, 0);
  EXPECT_EQ(outcome.result.steps, kEpochs * 8);
}

}  // namespace
}  // namespace minidl::train
