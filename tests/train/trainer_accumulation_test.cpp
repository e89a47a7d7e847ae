// train::Trainer's gradient accumulation (TrainerOptions::accumulate_steps) and gradient
// clipping (TrainerOptions::clip_grad_norm) on the CPU: N micro-batches of B take the step one
// batch of N * B takes, an epoch's last short group still steps, clipping scales the step as
// computed by hand, and both options travel in checkpoints: a resumed run continues bit for bit,
// and resuming with other values is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "minidl/core/generator.h"
#include "minidl/core/safetensors.h"
#include "minidl/data/dataloader.h"
#include "minidl/data/datasets/synthetic_dataset.h"
#include "minidl/nn/nn.h"
#include "minidl/ops/loss.h"
#include "minidl/ops/random.h"
#include "minidl/optim/optim.h"
#include "minidl/train/trainer.h"
#include "minidl/train/training_checkpoint.h"
#include "test_util.h"

namespace minidl::train {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kTrainSize = 256;
constexpr int64_t kEpochs = 2;

fs::path scratch_directory() {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path directory =
      fs::temp_directory_path() / "minidl-trainer-accumulation-test" / test->name();
  fs::remove_all(directory);
  fs::create_directories(directory);
  return directory;
}

std::shared_ptr<const data::Dataset> train_set() {
  static const auto dataset = data::make_synthetic_dataset(kTrainSize, {1, 14, 14}, 10, 1);
  return dataset;
}

const data::AugmentOptions& normalize() {
  static const auto options = data::AugmentOptions().normalize({0.5f}, {0.25f});
  return options;
}

// What a run changes beside its TrainerOptions.
struct RunSetup {
  int64_t batch_size = 32;
  // Batch norm and dropout make micro-batches differ from one large batch (statistics over
  // fewer samples, other random draws), so the equivalence tests leave them out.
  bool batch_norm_and_dropout = false;
  int64_t schedule_steps = 0;  // > 0: a cosine schedule over this many optimizer steps
  bool momentum = true;
};

nn::Sequential make_model(const RunSetup& setup) {
  manual_seed(7);
  if (setup.batch_norm_and_dropout)
    return nn::Sequential{nn::Conv2d(1, 4, 3),
                          nn::BatchNorm2d(4),
                          nn::ReLU(),
                          nn::Flatten(),
                          nn::Dropout(nn::DropoutOptions(0.25)),
                          nn::Linear(4 * 12 * 12, 10)};
  return nn::Sequential{nn::Conv2d(1, 4, 3), nn::ReLU(), nn::Flatten(),
                        nn::Linear(4 * 12 * 12, 10)};
}

data::DataLoaderOptions train_loader_options(int64_t batch_size) {
  return data::DataLoaderOptions(batch_size)
      .shuffle(true)
      .seed(3)
      .augment(data::AugmentOptions(normalize()).random_crop(2).horizontal_flip().seed(4));
}

struct Outcome {
  TrainingResult result;
  std::vector<Tensor> state;
};

Outcome train(TrainerOptions options, const RunSetup& setup = {}) {
  nn::Sequential model = make_model(setup);
  optim::SGDOptions sgd(0.05);
  if (setup.momentum) sgd.momentum(0.9).weight_decay(1e-4);
  optim::SGD optimizer(model->parameters(), sgd);
  std::optional<optim::CosineAnnealingLR> schedule;
  if (setup.schedule_steps > 0) schedule.emplace(optimizer, setup.schedule_steps);
  data::DataLoader train_loader(train_set(), train_loader_options(setup.batch_size));
  data::DataLoader test_loader(data::make_synthetic_dataset(100, {1, 14, 14}, 10, 2),
                               data::DataLoaderOptions(64).augment(normalize()));
  Trainer trainer(model, optimizer, train_loader, test_loader,
                  options.progress(ProgressMode::kNone).model_name("tiny").dataset_name("noise"));
  if (schedule) trainer.set_scheduler(&*schedule);
  Outcome outcome{trainer.fit(), {}};
  for (const auto& item : model->state_dict()) outcome.state.push_back(item.value().clone());
  return outcome;
}

void expect_same_weights(const Outcome& actual, const Outcome& expected) {
  ASSERT_EQ(actual.state.size(), expected.state.size());
  for (size_t i = 0; i < expected.state.size(); ++i)
    EXPECT_TRUE(testing::bitwise_equal(actual.state[i], expected.state[i])) << "state entry " << i;
}

TEST(TrainerAccumulation, TwoMicroBatchesStepAsOneBatchTwiceAsLarge) {
  const RunSetup small{.batch_size = 16, .schedule_steps = kEpochs * 8};
  const RunSetup large{.batch_size = 32, .schedule_steps = kEpochs * 8};
  const Outcome accumulated = train(TrainerOptions().epochs(kEpochs).accumulate_steps(2), small);
  const Outcome whole = train(TrainerOptions().epochs(kEpochs), large);
  EXPECT_EQ(accumulated.result.steps, kEpochs * 8);  // 16 micro-batches per epoch, 8 steps
  EXPECT_EQ(whole.result.steps, kEpochs * 8);
  ASSERT_EQ(accumulated.state.size(), whole.state.size());
  for (size_t i = 0; i < whole.state.size(); ++i)
    EXPECT_TRUE(testing::all_close(accumulated.state[i], whole.state[i], 1e-6, 1e-5))
        << "state entry " << i;
  // The same samples, so the same mean training loss; the schedule counted optimizer steps.
  for (size_t e = 0; e < whole.result.history.size(); ++e) {
    EXPECT_NEAR(accumulated.result.history[e].train_loss, whole.result.history[e].train_loss, 1e-5);
    EXPECT_EQ(accumulated.result.history[e].lr, whole.result.history[e].lr);
    EXPECT_EQ(accumulated.result.history[e].step, whole.result.history[e].step);
  }
  // And accumulation does change the step: one micro-batch per step is another run.
  const Outcome unaccumulated = train(TrainerOptions().epochs(kEpochs), small);
  EXPECT_FALSE(testing::all_close(unaccumulated.state[0], whole.state[0], 1e-4, 1e-3));
}

// 8 batches of 32 in groups of 3: 3, 3 and a last group of 2, which steps as one batch of 64.
TEST(TrainerAccumulation, AnEpochsLastShortGroupStillSteps) {
  const Outcome grouped =
      train(TrainerOptions().epochs(kEpochs).accumulate_steps(3), {.momentum = false});
  EXPECT_EQ(grouped.result.steps, kEpochs * 3);
  ASSERT_EQ(grouped.result.history.size(), 2u);
  EXPECT_EQ(grouped.result.history[0].step, 3);
  EXPECT_EQ(grouped.result.history[1].step, 6);
  // With accumulate_steps larger than the epoch, one step per epoch over all of it: the step a
  // batch of the whole training set takes.
  const Outcome whole_epoch =
      train(TrainerOptions().epochs(1).accumulate_steps(100), {.momentum = false});
  const Outcome one_batch =
      train(TrainerOptions().epochs(1), {.batch_size = 256, .momentum = false});
  EXPECT_EQ(whole_epoch.result.steps, 1);
  for (size_t i = 0; i < one_batch.state.size(); ++i)
    EXPECT_TRUE(testing::all_close(whole_epoch.state[i], one_batch.state[i], 1e-6, 1e-5))
        << "state entry " << i;
}

// One step of plain SGD (lr 0.05) with clip_grad_norm(max): the parameters move by
// -lr * g * min(max / (|g| + 1e-6), 1), |g| the 2-norm of all gradients together, which the
// test computes itself from the first batch.
TEST(TrainerClipping, ClipsTheStepAsComputedByHand) {
  constexpr double kMaxNorm = 0.05;
  constexpr double kLr = 0.05;
  const RunSetup setup{.momentum = false};
  const Outcome clipped =
      train(TrainerOptions().epochs(1).max_steps(1).clip_grad_norm(kMaxNorm), setup);
  const Outcome unclipped = train(TrainerOptions().epochs(1).max_steps(1), setup);

  nn::Sequential model = make_model(setup);
  const std::vector<Tensor> initial = [&] {
    std::vector<Tensor> values;
    for (const auto& item : model->state_dict()) values.push_back(item.value().clone());
    return values;
  }();
  data::DataLoader loader(train_set(), train_loader_options(setup.batch_size));
  loader.set_epoch(0);
  for (const data::Batch& batch : loader) {
    cross_entropy(model->forward(batch.images), batch.labels).backward();
    break;
  }
  double sum_of_squares = 0;
  for (const Tensor& parameter : model->parameters())
    for (const float g : to_vector<float>(parameter.grad()))
      sum_of_squares += static_cast<double>(g) * g;
  const double norm = std::sqrt(sum_of_squares);
  const double coefficient = std::min(kMaxNorm / (norm + 1e-6), 1.0);
  ASSERT_LT(coefficient, 0.5) << "the case should clip: the gradient norm is " << norm;

  const std::vector<Tensor> parameters = model->parameters();
  ASSERT_EQ(parameters.size(), clipped.state.size());  // no buffers in this model
  for (size_t i = 0; i < parameters.size(); ++i) {
    const std::vector<float> start = to_vector<float>(initial[i]);
    const std::vector<float> grad = to_vector<float>(parameters[i].grad());
    std::vector<float> expected(start.size());
    for (size_t k = 0; k < start.size(); ++k)
      expected[k] = static_cast<float>(start[k] - kLr * coefficient * grad[k]);
    EXPECT_TRUE(
        testing::all_close(clipped.state[i], tensor(expected, initial[i].sizes()), 1e-7, 1e-5))
        << "parameter " << i;
    EXPECT_FALSE(testing::all_close(unclipped.state[i], clipped.state[i], 1e-7, 1e-5))
        << "parameter " << i << " moved as far without clipping";
  }
}

// A run resumed from a checkpoint in the middle of an epoch (after max_steps) or after one
// continues bit for bit with accumulation, clipping, batch norm, dropout and a schedule; the
// checkpoint records both options and sits between optimizer steps.
TEST(TrainerAccumulation, AResumedRunContinuesBitForBit) {
  const fs::path directory = scratch_directory();
  const RunSetup setup{.batch_norm_and_dropout = true, .schedule_steps = kEpochs * 3};
  const auto options = [&] {
    return TrainerOptions().epochs(kEpochs).accumulate_steps(3).clip_grad_norm(0.5);
  };
  const Outcome straight = train(options(), setup);
  EXPECT_EQ(straight.result.steps, kEpochs * 3);

  const Outcome partial = train(options().max_steps(4).checkpoint_dir(directory), setup);
  EXPECT_EQ(partial.result.steps, 4);
  const serialize::SafetensorsContents file =
      serialize::read_safetensors(partial.result.last_checkpoint);
  EXPECT_EQ(file.metadata.at("accumulate_steps"), "3");
  EXPECT_EQ(file.metadata.at("clip_grad_norm"), "0.5");
  EXPECT_EQ(file.metadata.at("batch"), "3");  // epoch 2 after its first group of 3 batches
  const Outcome resumed = train(options().checkpoint_dir(directory).resume("auto"), setup);
  EXPECT_EQ(resumed.result.steps, kEpochs * 3);
  ASSERT_EQ(resumed.result.history.size(), 1u);
  EXPECT_EQ(resumed.result.history[0].train_loss, straight.result.history[1].train_loss);
  EXPECT_EQ(resumed.result.history[0].test_loss, straight.result.history[1].test_loss);
  expect_same_weights(resumed, straight);

  // Another grouping or another clip would take other steps: refused, naming both values.
  EXPECT_ERROR_CONTAINS(
      train(options().accumulate_steps(2).checkpoint_dir(directory).resume("auto"), setup),
      "was trained with accumulate_steps 3, but this run uses 2");
  EXPECT_ERROR_CONTAINS(
      train(options().clip_grad_norm(0).checkpoint_dir(directory).resume("auto"), setup),
      "was trained with clip_grad_norm 0.5, but this run uses 0");
}

// Checkpoints from before these options were trained with neither: they resume as 1 and 0.
TEST(TrainerAccumulation, ACheckpointWithoutTheEntriesResumesAsOneAndOff) {
  const fs::path directory = scratch_directory();
  const Outcome straight = train(TrainerOptions().epochs(kEpochs));
  const Outcome first = train(TrainerOptions().epochs(1).checkpoint_dir(directory));
  serialize::SafetensorsContents file = serialize::read_safetensors(first.result.last_checkpoint);
  ASSERT_EQ(file.metadata.erase("accumulate_steps"), 1u);
  ASSERT_EQ(file.metadata.erase("clip_grad_norm"), 1u);
  serialize::write_safetensors(first.result.last_checkpoint, file.tensors, file.metadata);
  EXPECT_ERROR_CONTAINS(
      train(TrainerOptions().epochs(kEpochs).accumulate_steps(2).checkpoint_dir(directory).resume(
          "auto")),
      "was trained with accumulate_steps 1, but this run uses 2");
  const Outcome resumed =
      train(TrainerOptions().epochs(kEpochs).checkpoint_dir(directory).resume("auto"));
  expect_same_weights(resumed, straight);
}

TEST(TrainerAccumulation, RejectsBadValues) {
  EXPECT_ERROR_CONTAINS(train(TrainerOptions().accumulate_steps(0)),
                        "Trainer: expected accumulate_steps >= 1, got 0");
  EXPECT_ERROR_CONTAINS(train(TrainerOptions().clip_grad_norm(-1)),
                        "Trainer: expected a finite clip_grad_norm >= 0 (0: no clipping), got -1");
  EXPECT_ERROR_CONTAINS(
      train(TrainerOptions().clip_grad_norm(std::numeric_limits<double>::quiet_NaN())),
      "Trainer: expected a finite clip_grad_norm >= 0");
}

}  // namespace
}  // namespace minidl::train
