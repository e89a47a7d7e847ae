// train::Trainer's gradient clipping and accumulation on a GPU: clipping inside the captured
// CUDA-graph step ends where eager steps do (the clip never waits for the device, so it can be
// captured), accumulation refuses the CUDA-graph step at construction and, eagerly, steps as one
// batch N times larger. Skipped without a GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "minidl/data/dataloader.h"
#include "minidl/data/datasets/synthetic_dataset.h"
#include "minidl/nn/nn.h"
#include "minidl/ops/random.h"
#include "minidl/optim/optim.h"
#include "minidl/train/trainer.h"
#include "test_util.h"

namespace minidl::train {
namespace {

constexpr int64_t kTrainSize = 256;
constexpr int64_t kEpochs = 2;

struct Outcome {
  TrainingResult result;
  std::vector<Tensor> state;  // on the CPU
};

// Batch norm only where asked: it makes micro-batches differ from one large batch.
Outcome train(TrainerOptions options, int64_t batch_size, bool batch_norm = true) {
  const Device gpu(kCUDA, 0);
  manual_seed(7);
  nn::Sequential model{nn::Conv2d(1, 4, 3), nn::ReLU(), nn::Flatten(), nn::Linear(4 * 12 * 12, 10)};
  if (batch_norm)
    model = nn::Sequential{nn::Conv2d(1, 4, 3), nn::BatchNorm2d(4), nn::ReLU(), nn::Flatten(),
                           nn::Linear(4 * 12 * 12, 10)};
  model->to(gpu);
  optim::SGD optimizer(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  const auto normalize = data::AugmentOptions().normalize({0.5f}, {0.25f});
  data::DataLoader train_loader(
      data::make_synthetic_dataset(kTrainSize, {1, 14, 14}, 10, 1),
      data::DataLoaderOptions(batch_size).shuffle(true).seed(3).device(gpu).augment(normalize));
  data::DataLoader test_loader(data::make_synthetic_dataset(100, {1, 14, 14}, 10, 2),
                               data::DataLoaderOptions(64).device(gpu).augment(normalize));
  Trainer trainer(model, optimizer, train_loader, test_loader,
                  options.epochs(kEpochs).progress(ProgressMode::kNone).handle_signals(false));
  Outcome outcome{trainer.fit(), {}};
  for (const auto& item : model->state_dict()) outcome.state.push_back(item.value().to(kCPU));
  return outcome;
}

void expect_close_states(const Outcome& actual, const Outcome& expected, double tolerance) {
  ASSERT_EQ(actual.state.size(), expected.state.size());
  for (size_t i = 0; i < expected.state.size(); ++i)
    EXPECT_TRUE(testing::all_close(actual.state[i], expected.state[i], tolerance, tolerance))
        << "state entry " << i;
}

class TrainerClippingCuda : public ::testing::TestWithParam<DType> {};

TEST_P(TrainerClippingCuda, ReplayedClippedStepsEndWhereEagerStepsDo) {
  SKIP_WITHOUT_CUDA();
  testing::DeterministicConvolutions deterministic;
  const auto options = [] { return TrainerOptions().clip_grad_norm(0.5); };
  const Outcome eager = train(options().precision(GetParam()).cuda_graph(false), 32);
  const Outcome graphed = train(options().precision(GetParam()).cuda_graph(true), 32);
  EXPECT_EQ(graphed.result.graph_replays, kEpochs * 8 - kGraphWarmupSteps);
  expect_close_states(graphed, eager, 1e-5);
  // The clip changed the run.
  const Outcome unclipped = train(TrainerOptions().precision(GetParam()).cuda_graph(false), 32);
  EXPECT_FALSE(testing::all_close(unclipped.state[0], eager.state[0], 1e-4, 1e-4));
}

INSTANTIATE_TEST_SUITE_P(Precisions, TrainerClippingCuda, ::testing::Values(kFloat32, kFloat16),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(dtype_name(info.param));
                         });

TEST(TrainerAccumulationCuda, RefusesTheCudaGraphStepAndStepsAsALargerBatchEagerly) {
  SKIP_WITHOUT_CUDA();
  testing::DeterministicConvolutions deterministic;
  EXPECT_ERROR_CONTAINS(train(TrainerOptions().accumulate_steps(2), 16),
                        "Trainer: accumulate_steps(2) cannot be combined with the CUDA-graph step");
  const Outcome accumulated =
      train(TrainerOptions().accumulate_steps(2).cuda_graph(false), 16, /*batch_norm=*/false);
  const Outcome whole = train(TrainerOptions().cuda_graph(false), 32, /*batch_norm=*/false);
  EXPECT_EQ(accumulated.result.steps, whole.result.steps);
  expect_close_states(accumulated, whole, 1e-5);
}

}  // namespace
}  // namespace minidl::train
