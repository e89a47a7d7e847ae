// train::Trainer with a ReduceLROnPlateau (Trainer::set_scheduler's second form) and with AdamW:
// the plateau scheduler is stepped once per complete epoch on the test loss (mode min) or the
// test accuracy (mode max), exactly as a scheduler fed the logged metrics by hand decides, and a
// run resumed from a mid-run checkpoint (AdamW's moments and steps, the plateau's best and
// counters) continues bit for bit.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <vector>

#include "minidl/core/generator.h"
#include "minidl/data/dataloader.h"
#include "minidl/data/datasets/synthetic_dataset.h"
#include "minidl/nn/nn.h"
#include "minidl/ops/random.h"
#include "minidl/optim/optim.h"
#include "minidl/train/trainer.h"
#include "test_util.h"

namespace minidl::train {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kEpochs = 4;

fs::path scratch_directory() {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path directory =
      fs::temp_directory_path() / "minidl-trainer-plateau-test" / test->name();
  fs::remove_all(directory);
  fs::create_directories(directory);
  return directory;
}

// A plateau that reacts within a 4-epoch run: every epoch that is not better by 1e-4 relative
// halves the lr (patience 0).
optim::ReduceLROnPlateauOptions plateau_options(optim::PlateauMode mode) {
  return optim::ReduceLROnPlateauOptions().mode(mode).factor(0.5).patience(0);
}

struct Outcome {
  TrainingResult result;
  std::vector<Tensor> state;
  optim::ScalarMap plateau_state;
  double final_lr = 0;
};

Outcome train(TrainerOptions options, optim::PlateauMode mode) {
  manual_seed(11);
  nn::Sequential model{nn::Conv2d(1, 4, 3), nn::BatchNorm2d(4), nn::ReLU(), nn::Flatten(),
                       nn::Linear(4 * 12 * 12, 10)};
  // A large lr on noise labels: the test loss soon stops improving, so the plateau acts.
  optim::AdamW optimizer(model->parameters(), optim::AdamWOptions(0.02));
  optim::ReduceLROnPlateau plateau(optimizer, plateau_options(mode));
  const auto normalize = data::AugmentOptions().normalize({0.5f}, {0.25f});
  data::DataLoader train_loader(data::make_synthetic_dataset(192, {1, 14, 14}, 10, 1),
                                data::DataLoaderOptions(32).shuffle(true).seed(3).augment(
                                    data::AugmentOptions(normalize).random_crop(2).seed(4)));
  data::DataLoader test_loader(data::make_synthetic_dataset(96, {1, 14, 14}, 10, 2),
                               data::DataLoaderOptions(48).augment(normalize));
  Trainer trainer(model, optimizer, train_loader, test_loader,
                  options.clip_grad_norm(1.0)
                      .progress(ProgressMode::kNone)
                      .model_name("tiny")
                      .dataset_name("noise"));
  trainer.set_scheduler(&plateau);
  Outcome outcome{
      trainer.fit(), {}, plateau.state_dict(), optimizer.param_groups()[0].options().get_lr()};
  for (const auto& item : model->state_dict()) outcome.state.push_back(item.value().clone());
  return outcome;
}

// The lrs a plateau scheduler fed `metrics` by hand sets after each of them.
std::vector<double> lrs_after_each(optim::PlateauMode mode, const std::vector<double>& metrics) {
  Tensor weight = zeros({1});
  optim::AdamW optimizer({weight}, optim::AdamWOptions(0.02));
  optim::ReduceLROnPlateau plateau(optimizer, plateau_options(mode));
  std::vector<double> lrs;
  for (double metric : metrics) {
    plateau.step(metric);
    lrs.push_back(plateau.get_last_lr()[0]);
  }
  return lrs;
}

void expect_decisions_follow(const Outcome& outcome, optim::PlateauMode mode) {
  const std::vector<EpochMetrics>& history = outcome.result.history;
  ASSERT_EQ(history.size(), static_cast<size_t>(kEpochs));
  std::vector<double> metrics;
  for (const EpochMetrics& epoch : history)
    metrics.push_back(mode == optim::PlateauMode::kMin ? epoch.test_loss : epoch.test_accuracy);
  const std::vector<double> expected = lrs_after_each(mode, metrics);
  // Epoch e + 1 trains with the lr set after epoch e; the run ends on the lr set after the last.
  EXPECT_EQ(history[0].lr, 0.02);
  for (size_t e = 0; e + 1 < history.size(); ++e)
    EXPECT_EQ(history[e + 1].lr, expected[e]) << "epoch " << e + 2;
  EXPECT_EQ(outcome.final_lr, expected.back());
  EXPECT_EQ(outcome.plateau_state.at("last_epoch"), static_cast<double>(kEpochs));
  // Not vacuous: the run reduced the lr at least once.
  EXPECT_LT(expected.back(), 0.02);
}

TEST(TrainerPlateau, StepsOncePerEpochOnTheTestLoss) {
  const Outcome outcome = train(TrainerOptions().epochs(kEpochs), optim::PlateauMode::kMin);
  expect_decisions_follow(outcome, optim::PlateauMode::kMin);
}

TEST(TrainerPlateau, ModeMaxFollowsTheTestAccuracy) {
  const Outcome outcome = train(TrainerOptions().epochs(kEpochs), optim::PlateauMode::kMax);
  expect_decisions_follow(outcome, optim::PlateauMode::kMax);
}

TEST(TrainerPlateau, AResumedRunContinuesBitForBit) {
  const fs::path directory = scratch_directory();
  const auto mode = optim::PlateauMode::kMin;
  const Outcome straight = train(TrainerOptions().epochs(kEpochs), mode);
  // Stopped mid-epoch 3: the checkpoint holds AdamW's state and the plateau's after 2 epochs.
  const Outcome partial =
      train(TrainerOptions().epochs(kEpochs).max_steps(2 * 6 + 3).checkpoint_dir(directory), mode);
  EXPECT_EQ(partial.result.steps, 15);
  const Outcome resumed =
      train(TrainerOptions().epochs(kEpochs).checkpoint_dir(directory).resume("auto"), mode);
  EXPECT_EQ(resumed.result.steps, straight.result.steps);
  ASSERT_EQ(resumed.state.size(), straight.state.size());
  for (size_t i = 0; i < straight.state.size(); ++i)
    EXPECT_TRUE(testing::bitwise_equal(resumed.state[i], straight.state[i])) << "state entry " << i;
  EXPECT_EQ(resumed.plateau_state, straight.plateau_state);
  EXPECT_EQ(resumed.final_lr, straight.final_lr);
}

}  // namespace
}  // namespace minidl::train
