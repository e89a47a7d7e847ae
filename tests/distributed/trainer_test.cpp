// distributed::Trainer on the CPU: a resumed run continues bit for bit (after an epoch, after a
// SIGINT mid-epoch, after max_steps), checkpoints rotate, and resuming from the wrong file is a
// clear error. The model is small but has everything a checkpoint must carry: momentum, a
// schedule, batch-norm buffers, dropout's random numbers, and shuffled, augmented batches.
#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/generator.h"
#include "data/dataloader.h"
#include "data/synthetic_dataset.h"
#include "distributed/metrics_log.h"
#include "distributed/stop_signal.h"
#include "distributed/trainer.h"
#include "distributed/training_checkpoint.h"
#include "nn/nn.h"
#include "nn/serialize.h"
#include "ops/random.h"
#include "optim/optim.h"
#include "test_util.h"

namespace minidl::distributed {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kBatchSize = 32;
constexpr int64_t kTrainSize = 256;  // 8 steps per epoch
constexpr int64_t kStepsPerEpoch = kTrainSize / kBatchSize;
constexpr int64_t kEpochs = 2;

// A fresh, empty directory for one test.
fs::path scratch_directory() {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path directory = fs::temp_directory_path() / "minidl-trainer-test" / test->name();
  fs::remove_all(directory);
  fs::create_directories(directory);
  return directory;
}

std::shared_ptr<const data::Dataset> train_set() {
  static const auto dataset = data::make_synthetic_dataset(kTrainSize, {1, 14, 14}, 10, 1);
  return dataset;
}

// Raises `signal_number` (once) while the loader reads sample `index` of epoch `epoch`, as a
// user pressing Ctrl-C (or a batch system sending SIGTERM) in the middle of an epoch would.
class InterruptingDataset : public data::Dataset {
 public:
  InterruptingDataset(std::shared_ptr<const data::Dataset> inner, int64_t epoch, int64_t index,
                      int signal_number)
      : inner_(std::move(inner)), epoch_(epoch), index_(index), signal_number_(signal_number) {}
  int64_t size() const override { return inner_->size(); }
  data::ImageSpec image_spec() const override { return inner_->image_spec(); }
  int64_t read(int64_t index, int64_t epoch, void* image) const override {
    if (epoch == epoch_ && index == index_ && !raised_.exchange(true)) std::raise(signal_number_);
    return inner_->read(index, epoch, image);
  }

 private:
  std::shared_ptr<const data::Dataset> inner_;
  int64_t epoch_, index_;
  int signal_number_;
  mutable std::atomic<bool> raised_{false};
};

struct Outcome {
  TrainingResult result;
  std::vector<Tensor> state;  // copies of the model's parameters and buffers at the end
};

Outcome train(TrainerOptions options, std::shared_ptr<const data::Dataset> dataset = train_set()) {
  manual_seed(7);
  nn::Sequential model{nn::Conv2d(1, 4, 3), nn::BatchNorm2d(4), nn::ReLU(), nn::Flatten(),
                       nn::Dropout(nn::DropoutOptions(0.25)), nn::Linear(4 * 12 * 12, 10)};
  optim::SGD optimizer(model->parameters(),
                       optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(1e-4));
  optim::CosineAnnealingLR schedule(optimizer, kEpochs * kStepsPerEpoch);
  const auto normalize = data::AugmentOptions().normalize({0.5f}, {0.25f});
  data::DataLoader train_loader(
      std::move(dataset),
      data::DataLoaderOptions(kBatchSize).shuffle(true).seed(3).augment(
          data::AugmentOptions(normalize).random_crop(2).horizontal_flip().seed(4)));
  data::DataLoader test_loader(data::make_synthetic_dataset(100, {1, 14, 14}, 10, 2),
                               data::DataLoaderOptions(64).augment(normalize));
  Trainer trainer(model, optimizer, train_loader, test_loader,
                  options.progress(ProgressMode::kNone).model_name("tiny").dataset_name("noise"));
  trainer.set_scheduler(&schedule);
  Outcome outcome{trainer.fit(), {}};
  for (const auto& item : model->state_dict()) outcome.state.push_back(item.value().clone());
  return outcome;
}

void expect_same_weights(const Outcome& actual, const Outcome& expected) {
  ASSERT_EQ(actual.state.size(), expected.state.size());
  for (size_t i = 0; i < expected.state.size(); ++i)
    EXPECT_TRUE(testing::bitwise_equal(actual.state[i], expected.state[i])) << "state entry " << i;
}

// Everything but the timings, exactly.
void expect_same_metrics(const EpochMetrics& actual, const EpochMetrics& expected) {
  EXPECT_EQ(actual.epoch, expected.epoch);
  EXPECT_EQ(actual.step, expected.step);
  EXPECT_EQ(actual.lr, expected.lr);
  EXPECT_EQ(actual.train_loss, expected.train_loss);
  EXPECT_EQ(actual.test_loss, expected.test_loss);
  EXPECT_EQ(actual.test_accuracy, expected.test_accuracy);
}

std::vector<std::string> lines_of(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(Trainer, ResumingAfterAnEpochContinuesBitForBit) {
  const fs::path directory = scratch_directory();
  const Outcome straight = train(TrainerOptions().epochs(kEpochs));
  ASSERT_EQ(straight.result.history.size(), 2u);
  EXPECT_EQ(straight.result.steps, kEpochs * kStepsPerEpoch);

  const Outcome first = train(TrainerOptions().epochs(1).checkpoint_dir(directory)
                                  .metrics_path(directory / "metrics.jsonl"));
  EXPECT_EQ(first.result.last_checkpoint, checkpoint_path(directory, kStepsPerEpoch));
  const Outcome second = train(TrainerOptions().epochs(kEpochs).checkpoint_dir(directory)
                                   .resume("auto").metrics_path(directory / "metrics.jsonl"));
  ASSERT_EQ(second.result.history.size(), 1u);
  EXPECT_EQ(second.result.epochs, kEpochs);
  EXPECT_EQ(second.result.steps, kEpochs * kStepsPerEpoch);
  expect_same_metrics(second.result.history[0], straight.result.history[1]);
  expect_same_weights(second, straight);
  // The metrics file holds both epochs once, as a run that never stopped writes them.
  const std::vector<std::string> lines = lines_of(directory / "metrics.jsonl");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("\"epoch\":1,"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("\"epoch\":2,"), std::string::npos) << lines[1];
}

class StopSignal : public ::testing::TestWithParam<int> {};

TEST_P(StopSignal, MidEpochSavesACheckpointAndTheResumedRunLosesNothing) {
  const fs::path directory = scratch_directory();
  const Outcome straight = train(TrainerOptions().epochs(kEpochs));
  const auto interrupting = std::make_shared<InterruptingDataset>(train_set(), 1, 100, GetParam());
  const Outcome stopped =
      train(TrainerOptions().epochs(kEpochs).checkpoint_dir(directory), interrupting);
  ASSERT_EQ(stopped.result.stop_signal, GetParam());
  EXPECT_EQ(stopped.result.epochs, 1);
  EXPECT_GT(stopped.result.steps, kStepsPerEpoch);
  EXPECT_LT(stopped.result.steps, kEpochs * kStepsPerEpoch);
  EXPECT_EQ(stopped.result.last_checkpoint, checkpoint_path(directory, stopped.result.steps));
  EXPECT_EQ(stopped.result.history.size(), 1u);  // the interrupted epoch is not evaluated

  const Outcome resumed = train(TrainerOptions().epochs(kEpochs).checkpoint_dir(directory)
                                    .resume(stopped.result.last_checkpoint.string()));
  EXPECT_FALSE(resumed.result.stop_signal.has_value());
  ASSERT_EQ(resumed.result.history.size(), 1u);
  expect_same_metrics(resumed.result.history[0], straight.result.history[1]);
  expect_same_weights(resumed, straight);
}

INSTANTIATE_TEST_SUITE_P(Trainer, StopSignal, ::testing::Values(SIGINT, SIGTERM),
                         [](const auto& info) { return signal_name(info.param).substr(3); });

TEST(Trainer, MaxStepsEndsMidEpochAndALongerResumedRunFinishesIt) {
  const fs::path directory = scratch_directory();
  const Outcome straight = train(TrainerOptions().epochs(kEpochs));
  const Outcome partial = train(TrainerOptions().epochs(kEpochs).max_steps(kStepsPerEpoch + 3)
                                    .checkpoint_dir(directory));
  EXPECT_EQ(partial.result.steps, kStepsPerEpoch + 3);
  EXPECT_EQ(partial.result.epochs, 1);  // the second epoch is still in progress
  ASSERT_EQ(partial.result.history.size(), 2u);
  EXPECT_EQ(partial.result.history[1].step, kStepsPerEpoch + 3);
  const Outcome rest = train(TrainerOptions().epochs(kEpochs).checkpoint_dir(directory)
                                 .resume("auto"));
  ASSERT_EQ(rest.result.history.size(), 1u);
  expect_same_metrics(rest.result.history[0], straight.result.history[1]);
  expect_same_weights(rest, straight);
}

// Under float16 autocast the GradScaler's state travels in the checkpoint too (its scale and
// growth tracker decide which later steps are skipped), and bfloat16 needs no scaler.
class MixedPrecision : public ::testing::TestWithParam<DType> {};

TEST_P(MixedPrecision, ResumesBitForBitAndRecordsItsPrecision) {
  const fs::path directory = scratch_directory();
  const DType precision = GetParam();
  const Outcome straight = train(TrainerOptions().epochs(kEpochs).precision(precision));
  const Outcome first = train(TrainerOptions().epochs(1).precision(precision)
                                  .checkpoint_dir(directory));
  const serialize::SafetensorsContents file =
      serialize::read_safetensors(first.result.last_checkpoint);
  const std::string name = precision == kFloat16 ? "fp16" : "bf16";
  EXPECT_EQ(file.metadata.at("precision"), name);
  EXPECT_EQ(file.metadata.count("grad_scaler"), precision == kFloat16 ? 1u : 0u);
  EXPECT_EQ(first.result.history[0].precision, name);
  const Outcome second = train(TrainerOptions().epochs(kEpochs).precision(precision)
                                   .checkpoint_dir(directory).resume("auto"));
  ASSERT_EQ(second.result.history.size(), 1u);
  expect_same_metrics(second.result.history[0], straight.result.history[1]);
  expect_same_weights(second, straight);
  // The master weights stay float32, and training in 16 bits still differs from float32.
  const Outcome full = train(TrainerOptions().epochs(kEpochs));
  EXPECT_EQ(second.state[0].dtype(), kFloat32);
  EXPECT_FALSE(testing::bitwise_equal(second.state[0], full.state[0]));
  EXPECT_ERROR_CONTAINS(train(TrainerOptions().epochs(kEpochs).checkpoint_dir(directory)
                                  .resume("auto")),
                        "was trained in " + name + " precision, but this run uses fp32");
}

INSTANTIATE_TEST_SUITE_P(Trainer, MixedPrecision, ::testing::Values(kFloat16, kBFloat16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(Trainer, KeepsOnlyTheNewestCheckpoints) {
  const fs::path directory = scratch_directory();
  train(TrainerOptions().epochs(4).checkpoint_dir(directory).keep_checkpoints(2));
  const std::vector<fs::path> kept = list_checkpoints(directory);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0], checkpoint_path(directory, 3 * kStepsPerEpoch));
  EXPECT_EQ(kept[1], checkpoint_path(directory, 4 * kStepsPerEpoch));
  EXPECT_EQ(newest_checkpoint(directory), kept[1]);
}

TEST(Trainer, ResumeAutoWithNoCheckpointStartsAfresh) {
  const fs::path directory = scratch_directory();
  const Outcome fresh = train(TrainerOptions().epochs(1));
  const Outcome automatic = train(TrainerOptions().epochs(1).checkpoint_dir(directory).resume("auto"));
  expect_same_weights(automatic, fresh);
}

TEST(Trainer, RefusesACheckpointOfAnotherModelOrDataset) {
  const fs::path directory = scratch_directory();
  const Outcome first = train(TrainerOptions().epochs(1).checkpoint_dir(directory));
  const std::string path = first.result.last_checkpoint.string();
  nn::Sequential model{nn::Linear(2, 2)};
  optim::SGD optimizer(model->parameters(), optim::SGDOptions(0.1));
  EXPECT_ERROR_CONTAINS(load_training_checkpoint(path, *model.ptr(), optimizer, nullptr, "lenet",
                                                 "noise"),
                        "checkpoint " + path + " holds the model \"tiny\", but this run trains "
                        "\"lenet\"");
  EXPECT_ERROR_CONTAINS(load_training_checkpoint(path, *model.ptr(), optimizer, nullptr, "tiny",
                                                 "cifar10"),
                        "was trained on \"noise\", but this run trains on \"cifar10\"");
  // The right names but a model of another shape: the model's own load names the tensors.
  EXPECT_ERROR_CONTAINS(load_training_checkpoint(path, *model.ptr(), optimizer, nullptr, "tiny",
                                                 "noise"),
                        "checkpoint " + path + ": ");
}

TEST(Trainer, RefusesFilesThatAreNotTrainingCheckpoints) {
  const fs::path directory = scratch_directory();
  nn::Sequential model{nn::Linear(2, 2)};
  optim::SGD optimizer(model->parameters(), optim::SGDOptions(0.1));
  const fs::path weights = directory / "weights.safetensors";
  nn::save(model, weights);
  EXPECT_ERROR_CONTAINS(load_training_checkpoint(weights, *model.ptr(), optimizer, nullptr, "a",
                                                 "b"),
                        "checkpoint " + weights.string() + ": expected a training checkpoint");
  const fs::path garbage = directory / "garbage.safetensors";
  std::ofstream(garbage) << "not a checkpoint";
  EXPECT_ERROR_CONTAINS(train(TrainerOptions().resume(garbage.string())), garbage.string());
  EXPECT_ERROR_CONTAINS(train(TrainerOptions().resume((directory / "missing").string())),
                        "checkpoint " + (directory / "missing").string() + ": no such file");
}

TEST(Trainer, RejectsBadOptionsAndUnnormalisedImages) {
  EXPECT_ERROR_CONTAINS(train(TrainerOptions().epochs(0)), "Trainer: expected at least 1 epoch");
  EXPECT_ERROR_CONTAINS(train(TrainerOptions().resume("auto")),
                        "resume \"auto\" needs a checkpoint directory");
  nn::Sequential model{nn::Flatten(), nn::Linear(196, 10)};
  optim::SGD optimizer(model->parameters(), optim::SGDOptions(0.1));
  data::DataLoader raw(train_set(), data::DataLoaderOptions(kBatchSize));
  Trainer trainer(model, optimizer, raw, raw, TrainerOptions().progress(ProgressMode::kNone));
  EXPECT_ERROR_CONTAINS(trainer.fit(), "Trainer: expected float images from the loader");
}

TEST(MetricsLog, AResumedRunKeepsTheEpochsBeforeItsCheckpoint) {
  const fs::path path = scratch_directory() / "metrics.jsonl";
  {
    MetricsLog log(path, 0);
    for (int64_t epoch = 1; epoch <= 3; ++epoch) log.append(EpochMetrics{.epoch = epoch});
  }
  EXPECT_EQ(lines_of(path).size(), 3u);
  {
    MetricsLog log(path, 2);
    log.append(EpochMetrics{.epoch = 3, .step = 99});
  }
  const std::vector<std::string> lines = lines_of(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[2], to_json(EpochMetrics{.epoch = 3, .step = 99}));
  MetricsLog fresh(path, 0);
  EXPECT_TRUE(lines_of(path).empty());
}

}  // namespace
}  // namespace minidl::distributed
