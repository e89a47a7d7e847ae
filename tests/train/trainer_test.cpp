// train::Trainer on the CPU: a resumed run continues bit for bit (after an epoch, after a
// SIGINT mid-epoch, after max_steps), checkpoints rotate, and resuming from the wrong file is a
// clear error. The model is small but has everything a checkpoint must carry: momentum, a
// schedule, batch-norm buffers, dropout's random numbers, and shuffled, augmented batches.
#include "minidl/train/trainer.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "minidl/core/generator.h"
#include "minidl/core/safetensors.h"
#include "minidl/data/dataloader.h"
#include "minidl/data/datasets/synthetic_dataset.h"
#include "minidl/nn/nn.h"
#include "minidl/nn/serialize.h"
#include "minidl/ops/random.h"
#include "minidl/optim/optim.h"
#include "minidl/train/metrics_log.h"
#include "minidl/train/stop_signal.h"
#include "minidl/train/training_checkpoint.h"
#include "test_util.h"

namespace minidl::train {
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

// Copies of a model's parameters and buffers.
std::vector<Tensor> copy_state(const nn::Module& model) {
  std::vector<Tensor> state;
  for (const auto& item : model.state_dict()) state.push_back(item.value().clone());
  return state;
}

struct Outcome {
  TrainingResult result;
  std::vector<Tensor> state;          // at the end
  std::vector<Tensor> initial_state;  // before fit()
};

// The cosine schedule of the runs, but `lr` from epoch `from` on: a run that diverges there.
class DivergingSchedule : public optim::CosineAnnealingLR {
 public:
  DivergingSchedule(optim::Optimizer& optimizer, int64_t T_max, int64_t from, double lr)
      : CosineAnnealingLR(optimizer, T_max), from_(from), lr_(lr) {}
  double lr_at(int64_t epoch, size_t group) const override {
    return epoch >= from_ ? lr_ : CosineAnnealingLR::lr_at(epoch, group);
  }

 private:
  int64_t from_;
  double lr_;
};

// What a test changes about the run beside its TrainerOptions.
struct RunSetup {
  std::shared_ptr<const data::Dataset> dataset = train_set();
  int64_t schedule_steps = kEpochs * kStepsPerEpoch;  // the cosine schedule's T_max
  int64_t diverge_from_step = 0;  // > 0: every step from this one on has the lr 1e30
  std::shared_ptr<const data::Dataset> test_dataset =
      data::make_synthetic_dataset(100, {1, 14, 14}, 10, 2);
};

Outcome train(TrainerOptions options, const RunSetup& setup = {}) {
  manual_seed(7);
  nn::Sequential model{nn::Conv2d(1, 4, 3),
                       nn::BatchNorm2d(4),
                       nn::ReLU(),
                       nn::Flatten(),
                       nn::Dropout(nn::DropoutOptions(0.25)),
                       nn::Linear(4 * 12 * 12, 10)};
  optim::SGD optimizer(model->parameters(),
                       optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(1e-4));
  DivergingSchedule schedule(optimizer, setup.schedule_steps,
                             setup.diverge_from_step > 0 ? setup.diverge_from_step : INT64_MAX,
                             1e30);
  const auto normalize = data::AugmentOptions().normalize({0.5f}, {0.25f});
  data::DataLoader train_loader(
      setup.dataset,
      data::DataLoaderOptions(kBatchSize)
          .shuffle(true)
          .seed(3)
          .augment(data::AugmentOptions(normalize).random_crop(2).horizontal_flip().seed(4)));
  data::DataLoader test_loader(setup.test_dataset, data::DataLoaderOptions(64).augment(normalize));
  Trainer trainer(model, optimizer, train_loader, test_loader,
                  options.progress(ProgressMode::kNone).model_name("tiny").dataset_name("noise"));
  trainer.set_scheduler(&schedule);
  const std::vector<Tensor> initial_state = copy_state(*model.ptr());
  TrainingResult result = trainer.fit();
  return {std::move(result), copy_state(*model.ptr()), initial_state};
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

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(Trainer, ResumingAfterAnEpochContinuesBitForBit) {
  const fs::path directory = scratch_directory();
  const Outcome straight = train(TrainerOptions().epochs(kEpochs));
  ASSERT_EQ(straight.result.history.size(), 2u);
  EXPECT_EQ(straight.result.steps, kEpochs * kStepsPerEpoch);

  const Outcome first = train(TrainerOptions().epochs(1).checkpoint_dir(directory).metrics_path(
      directory / "metrics.jsonl"));
  EXPECT_EQ(first.result.last_checkpoint, checkpoint_path(directory, kStepsPerEpoch));
  const Outcome second =
      train(TrainerOptions().epochs(kEpochs).checkpoint_dir(directory).resume("auto").metrics_path(
          directory / "metrics.jsonl"));
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
      train(TrainerOptions().epochs(kEpochs).checkpoint_dir(directory), {.dataset = interrupting});
  ASSERT_EQ(stopped.result.stop_signal, GetParam());
  EXPECT_EQ(stopped.result.epochs, 1);
  EXPECT_GT(stopped.result.steps, kStepsPerEpoch);
  EXPECT_LT(stopped.result.steps, kEpochs * kStepsPerEpoch);
  EXPECT_EQ(stopped.result.last_checkpoint, checkpoint_path(directory, stopped.result.steps));
  EXPECT_EQ(stopped.result.history.size(), 1u);  // the interrupted epoch is not evaluated

  const Outcome resumed = train(TrainerOptions().epochs(kEpochs).checkpoint_dir(directory).resume(
      stopped.result.last_checkpoint.string()));
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
  const Outcome partial = train(
      TrainerOptions().epochs(kEpochs).max_steps(kStepsPerEpoch + 3).checkpoint_dir(directory));
  EXPECT_EQ(partial.result.steps, kStepsPerEpoch + 3);
  EXPECT_EQ(partial.result.epochs, 1);  // the second epoch is still in progress
  ASSERT_EQ(partial.result.history.size(), 2u);
  EXPECT_EQ(partial.result.history[1].step, kStepsPerEpoch + 3);
  const Outcome rest =
      train(TrainerOptions().epochs(kEpochs).checkpoint_dir(directory).resume("auto"));
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
  const Outcome first =
      train(TrainerOptions().epochs(1).precision(precision).checkpoint_dir(directory));
  const serialize::SafetensorsContents file =
      serialize::read_safetensors(first.result.last_checkpoint);
  const std::string name = precision == kFloat16 ? "fp16" : "bf16";
  EXPECT_EQ(file.metadata.at("precision"), name);
  EXPECT_EQ(file.metadata.count("grad_scaler"), precision == kFloat16 ? 1u : 0u);
  EXPECT_EQ(first.result.history[0].precision, name);
  const Outcome second =
      train(TrainerOptions().epochs(kEpochs).precision(precision).checkpoint_dir(directory).resume(
          "auto"));
  ASSERT_EQ(second.result.history.size(), 1u);
  expect_same_metrics(second.result.history[0], straight.result.history[1]);
  expect_same_weights(second, straight);
  // The master weights stay float32, and training in 16 bits still differs from float32.
  const Outcome full = train(TrainerOptions().epochs(kEpochs));
  EXPECT_EQ(second.state[0].dtype(), kFloat32);
  EXPECT_FALSE(testing::bitwise_equal(second.state[0], full.state[0]));
  EXPECT_ERROR_CONTAINS(
      train(TrainerOptions().epochs(kEpochs).checkpoint_dir(directory).resume("auto")),
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

TEST(Trainer, ACheckpointNameWithAStepTooLargeIsSkippedNotAnError) {
  const fs::path directory = scratch_directory();
  write_file(directory / "checkpoint-999999999999999999999999.safetensors", "not ours");
  const Outcome run = train(TrainerOptions().epochs(1).checkpoint_dir(directory).resume("auto"));
  EXPECT_EQ(run.result.epochs, 1);
  EXPECT_EQ(list_checkpoints(directory),
            std::vector<fs::path>{checkpoint_path(directory, kStepsPerEpoch)});
  EXPECT_TRUE(fs::exists(directory / "checkpoint-999999999999999999999999.safetensors"));
}

TEST(Trainer, ResumingFromAFolderOrAPipeSaysWhatThePathIs) {
  const fs::path directory = scratch_directory();
  EXPECT_ERROR_CONTAINS(train(TrainerOptions().epochs(1).resume(directory.string())),
                        "checkpoint " + directory.string() +
                            ": expected a checkpoint file, found a directory (to resume from the "
                            "newest checkpoint in a folder, make it the checkpoint folder");
  const fs::path pipe = directory / "pipe";
  ASSERT_EQ(mkfifo(pipe.c_str(), 0600), 0);
  EXPECT_ERROR_CONTAINS(
      train(TrainerOptions().epochs(1).resume(pipe.string())),
      "checkpoint " + pipe.string() + ": expected a checkpoint file, found a named pipe (FIFO)");
}

// Note [One run per checkpoint folder].
TEST(Trainer, AFreshRunInAFolderWithCheckpointsIsRefusedUnlessItOverwrites) {
  const fs::path directory = scratch_directory();
  train(TrainerOptions().epochs(1).checkpoint_dir(directory));
  const std::string first = read_file(checkpoint_path(directory, kStepsPerEpoch));
  EXPECT_ERROR_CONTAINS(train(TrainerOptions().epochs(2).max_steps(3).checkpoint_dir(directory)),
                        "TrainerOptions::checkpoint_dir " + directory.string() +
                            " holds the checkpoints of another run (1, the newest "
                            "checkpoint-000000008.safetensors); continue it with resume(\"auto\")");
  EXPECT_EQ(read_file(checkpoint_path(directory, kStepsPerEpoch)), first);
  const Outcome again =
      train(TrainerOptions().epochs(1).max_steps(3).checkpoint_dir(directory).overwrite(true));
  EXPECT_EQ(again.result.steps, 3);
  EXPECT_EQ(list_checkpoints(directory), std::vector<fs::path>{checkpoint_path(directory, 3)});
}

TEST(Trainer, ResumingWithOtherSettingsIsRefusedNamingEachDifference) {
  const fs::path directory = scratch_directory();
  const RunSettings settings = {{"--lr", "0.05"}, {"--seed", "7"}};
  train(TrainerOptions().epochs(1).checkpoint_dir(directory).run_settings(settings));
  const RunSettings other = {{"--lr", "0.1"}, {"--seed", "7"}, {"--tf32", "on"}};
  EXPECT_ERROR_CONTAINS(
      train(TrainerOptions().epochs(kEpochs).checkpoint_dir(directory).resume("auto").run_settings(
          other)),
      "was trained with other settings than this run's: --lr: the checkpoint's 0.05, this run's "
      "0.1; --tf32: the checkpoint's none, this run's on. Resume with the settings it was trained "
      "with");
  // The same settings resume; a checkpoint that recorded none (older ones) is not compared.
  const Outcome resumed =
      train(TrainerOptions().epochs(kEpochs).checkpoint_dir(directory).resume("auto").run_settings(
          settings));
  EXPECT_EQ(resumed.result.epochs, kEpochs);
  EXPECT_TRUE(differing_settings({}, other).empty());
}

// Issue 34, item 4: nothing read from a checkpoint is trusted.
TEST(Trainer, AFlippedBitInACheckpointIsAnErrorNamingTheFileAndResumeAutoFallsBack) {
  const fs::path directory = scratch_directory();
  train(TrainerOptions().epochs(kEpochs).checkpoint_dir(directory));
  const fs::path newest = checkpoint_path(directory, kEpochs * kStepsPerEpoch);
  std::string bytes = read_file(newest);
  bytes[bytes.size() - 5] ^= 0x10;  // in the last tensor's data: still a valid safetensors file
  write_file(newest, bytes);
  EXPECT_ERROR_CONTAINS(train(TrainerOptions().epochs(kEpochs).resume(newest.string())),
                        "checkpoint " + newest.string() + ": the bytes of its tensor \"");
  EXPECT_ERROR_CONTAINS(train(TrainerOptions().epochs(kEpochs).resume(newest.string())),
                        "when it was written: the file is damaged");
  // resume auto skips it and continues from the checkpoint before, to the same end.
  const Outcome resumed =
      train(TrainerOptions().epochs(kEpochs).checkpoint_dir(directory).resume("auto"));
  EXPECT_EQ(resumed.result.steps, kEpochs * kStepsPerEpoch);
  EXPECT_EQ(resumed.result.history.size(), 1u);
}

TEST(Trainer, ACheckpointRenamedToAnotherStepIsRefused) {
  const fs::path directory = scratch_directory();
  train(TrainerOptions().epochs(1).checkpoint_dir(directory));
  const fs::path renamed = checkpoint_path(directory, 99);
  fs::rename(checkpoint_path(directory, kStepsPerEpoch), renamed);
  EXPECT_ERROR_CONTAINS(
      train(TrainerOptions().epochs(kEpochs).resume(renamed.string())),
      "checkpoint " + renamed.string() +
          ": its name says step 000000099, but it holds step 8 (was it renamed?)");
}

TEST(Trainer, AFinishedCheckpointWithNonFiniteWeightsIsAnErrorNamingTheTensor) {
  const fs::path directory = scratch_directory();
  train(TrainerOptions().epochs(1).checkpoint_dir(directory));
  const fs::path path = checkpoint_path(directory, kStepsPerEpoch);
  serialize::SafetensorsContents contents = serialize::read_safetensors(path);
  for (auto& [name, tensor] : contents.tensors)
    if (name == "model.5.weight") tensor.data_ptr<float>()[3] = std::nanf("");
  contents.metadata.erase("tensor_crc32");  // as a checkpoint written before checksums
  serialize::write_safetensors(path, contents.tensors, contents.metadata);
  EXPECT_ERROR_CONTAINS(
      train(TrainerOptions().epochs(1).resume(path.string())),
      "checkpoint " + path.string() + ": its tensor \"5.weight\" holds values that are not finite");
}

TEST(Trainer, AnEmptyTestSetIsAnErrorBeforeTraining) {
  const fs::path directory = scratch_directory();
  EXPECT_ERROR_CONTAINS(
      train(TrainerOptions().epochs(1).checkpoint_dir(directory),
            {.test_dataset = data::make_synthetic_dataset(0, {1, 14, 14}, 10, 2)}),
      "Trainer: the test loader has no batches (its dataset is empty)");
  EXPECT_TRUE(list_checkpoints(directory).empty());
}

TEST(Trainer, ResumeAutoWithNoCheckpointStartsAfresh) {
  const fs::path directory = scratch_directory();
  const Outcome fresh = train(TrainerOptions().epochs(1));
  const Outcome automatic =
      train(TrainerOptions().epochs(1).checkpoint_dir(directory).resume("auto"));
  expect_same_weights(automatic, fresh);
}

TEST(Trainer, RefusesACheckpointOfAnotherModelOrDataset) {
  const fs::path directory = scratch_directory();
  const Outcome first = train(TrainerOptions().epochs(1).checkpoint_dir(directory));
  const std::string path = first.result.last_checkpoint.string();
  nn::Sequential model{nn::Linear(2, 2)};
  optim::SGD optimizer(model->parameters(), optim::SGDOptions(0.1));
  EXPECT_ERROR_CONTAINS(
      load_training_checkpoint(path, *model.ptr(), optimizer, nullptr, "lenet", "noise"),
      "checkpoint " + path +
          " holds the model \"tiny\", but this run trains "
          "\"lenet\"");
  EXPECT_ERROR_CONTAINS(
      load_training_checkpoint(path, *model.ptr(), optimizer, nullptr, "tiny", "cifar10"),
      "was trained on \"noise\", but this run trains on \"cifar10\"");
  // The right names but a model of another shape: the model's own load names the tensors.
  EXPECT_ERROR_CONTAINS(
      load_training_checkpoint(path, *model.ptr(), optimizer, nullptr, "tiny", "noise"),
      "checkpoint " + path + ": ");
}

TEST(Trainer, RefusesFilesThatAreNotTrainingCheckpoints) {
  const fs::path directory = scratch_directory();
  nn::Sequential model{nn::Linear(2, 2)};
  optim::SGD optimizer(model->parameters(), optim::SGDOptions(0.1));
  const fs::path weights = directory / "weights.safetensors";
  nn::save(model, weights);
  EXPECT_ERROR_CONTAINS(
      load_training_checkpoint(weights, *model.ptr(), optimizer, nullptr, "a", "b"),
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

// Issue 15, item 1: resuming a run that has trained every epoch evaluates it and reports that,
// instead of a summary of zeros.
TEST(Trainer, ResumingAFinishedRunEvaluatesItWithoutTraining) {
  const fs::path directory = scratch_directory();
  const Outcome finished = train(TrainerOptions().epochs(kEpochs).checkpoint_dir(directory));
  const Outcome again =
      train(TrainerOptions().epochs(kEpochs).checkpoint_dir(directory).resume("auto").metrics_path(
          directory / "metrics.jsonl"));
  EXPECT_TRUE(again.result.history.empty());
  EXPECT_EQ(again.result.epochs, kEpochs);
  EXPECT_EQ(again.result.steps, kEpochs * kStepsPerEpoch);
  EXPECT_EQ(again.result.images_trained, 0);
  EXPECT_EQ(again.result.test.samples, 100);
  EXPECT_EQ(again.result.test.loss, finished.result.test.loss);
  EXPECT_EQ(again.result.test.accuracy, finished.result.test.accuracy);
  EXPECT_EQ(again.result.last_checkpoint, checkpoint_path(directory, kEpochs * kStepsPerEpoch));
  expect_same_weights(again, finished);
  // max_steps reached counts as finished too.
  const fs::path capped = directory / "capped";
  const Outcome partial =
      train(TrainerOptions().epochs(kEpochs).max_steps(3).checkpoint_dir(capped));
  const Outcome resumed =
      train(TrainerOptions().epochs(kEpochs).max_steps(3).checkpoint_dir(capped).resume("auto"));
  EXPECT_EQ(resumed.result.steps, 3);
  EXPECT_EQ(resumed.result.images_trained, 0);
  EXPECT_EQ(resumed.result.test.loss, partial.result.test.loss);
}

// Item 2: a checkpoint continues only the schedule it was trained on.
TEST(Trainer, ResumingOnAnotherScheduleIsRefusedNamingBoth) {
  const fs::path directory = scratch_directory();
  train(TrainerOptions().epochs(1).checkpoint_dir(directory));
  // As --epochs 3 instead of 2 would make it: T_max 24 instead of 16.
  EXPECT_ERROR_CONTAINS(train(TrainerOptions().epochs(3).checkpoint_dir(directory).resume("auto"),
                              {.schedule_steps = 3 * kStepsPerEpoch}),
                        "was trained on the schedule {\"T_max\":16.0,");
  EXPECT_ERROR_CONTAINS(train(TrainerOptions().epochs(3).checkpoint_dir(directory).resume("auto"),
                              {.schedule_steps = 3 * kStepsPerEpoch}),
                        "but this run's is {\"T_max\":24.0,");
  // More epochs on the same schedule are allowed: the cosine goes on as PyTorch's closed form.
  const Outcome longer = train(TrainerOptions().epochs(3).checkpoint_dir(directory).resume("auto"));
  EXPECT_EQ(longer.result.steps, 3 * kStepsPerEpoch);
}

// Item 4: a diverging run stops at the check after it diverged, names the step and the last
// finite loss, and leaves the checkpoint of the last good epoch as the newest.
TEST(Trainer, ANonFiniteLossStopsTheRunAndKeepsTheLastGoodCheckpoint) {
  const fs::path directory = scratch_directory();
  const RunSetup diverging{.diverge_from_step = kStepsPerEpoch};
  try {
    train(TrainerOptions().epochs(kEpochs).checkpoint_dir(directory), diverging);
    ADD_FAILURE() << "a run with the lr 1e30 in its second epoch trained on";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("Trainer: the training loss became "), std::string::npos) << message;
    EXPECT_NE(message.find(" and step 16 (epoch 2): the model has diverged"), std::string::npos)
        << message;
    EXPECT_NE(message.find("between step 8 (running loss "), std::string::npos) << message;
  }
  const std::vector<fs::path> kept = list_checkpoints(directory);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0], checkpoint_path(directory, kStepsPerEpoch));
  // With a check every 2 steps it stops within 2 steps of diverging.
  try {
    train(TrainerOptions().epochs(kEpochs).log_every(2), diverging);
    ADD_FAILURE() << "the diverging run trained on";
  } catch (const Error& error) {
    const std::string message = error.what();
    const size_t at = message.find(") and step ");
    ASSERT_NE(at, std::string::npos) << message;
    EXPECT_LT(std::stoll(message.substr(at + 11)), 2 * kStepsPerEpoch) << message;
  }
}

// Item 4, float16: steps the GradScaler skips (every one, with a scale of 2^40 that overflows
// float16's gradients) have finite losses and do not stop the run.
TEST(Trainer, SkippedFloat16StepsDoNotCountAsDivergence) {
  const Outcome skipped =
      train(TrainerOptions().epochs(kEpochs).log_every(1).precision(kFloat16).grad_scaler(
          amp::GradScalerOptions().init_scale(0x1p40).max_consecutive_skips(0)));
  EXPECT_EQ(skipped.result.steps, kEpochs * kStepsPerEpoch);
  EXPECT_TRUE(std::isfinite(skipped.result.history.back().train_loss));
  // Every step was skipped: the convolution's weight (state entry 0) is the initial one.
  EXPECT_TRUE(testing::bitwise_equal(skipped.state[0], skipped.initial_state[0]));
}

// Item 5: temporaries of checkpoint writes that a killed run left are removed at the start of the
// next run; those of live processes and other files stay.
TEST(Trainer, RemovesTheTemporariesOfKilledCheckpointWrites) {
  const fs::path directory = scratch_directory();
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);  // now a pid no process has
  const std::string prefix = checkpoint_path(directory, 8).string() + ".tmp-";
  const fs::path dead = prefix + std::to_string(child) + "-0";
  const fs::path own = prefix + std::to_string(::getpid()) + "-3";  // a previous holder of the pid
  const fs::path live = prefix + std::to_string(::getppid()) + "-1";
  const fs::path other = directory / "notes.tmp-1-0";
  for (const fs::path& path : {dead, own, live, other}) std::ofstream(path) << "partial";
  train(TrainerOptions().epochs(1).checkpoint_dir(directory));
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_FALSE(fs::exists(own));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(other));
  EXPECT_EQ(remove_stale_temporaries(directory), std::vector<fs::path>{});
}

// Item 6: resume "auto" skips a damaged newest checkpoint and continues from the newest one that
// reads; with none readable it fails listing each.
TEST(Trainer, ResumeAutoFallsBackFromADamagedNewestCheckpoint) {
  const fs::path directory = scratch_directory();
  const Outcome straight = train(TrainerOptions().epochs(kEpochs));
  train(TrainerOptions().epochs(kEpochs).checkpoint_dir(directory));
  const fs::path newest = checkpoint_path(directory, kEpochs * kStepsPerEpoch);
  fs::resize_file(newest, fs::file_size(newest) / 2);
  const Outcome resumed =
      train(TrainerOptions().epochs(kEpochs).checkpoint_dir(directory).resume("auto"));
  ASSERT_EQ(resumed.result.history.size(), 1u);  // the second epoch again
  expect_same_metrics(resumed.result.history[0], straight.result.history[1]);
  expect_same_weights(resumed, straight);

  const fs::path damaged = scratch_directory() / "damaged";
  fs::create_directories(damaged);
  std::ofstream(checkpoint_path(damaged, 8)) << "garbage";
  std::ofstream(checkpoint_path(damaged, 16)) << "";
  EXPECT_ERROR_CONTAINS(
      train(TrainerOptions().epochs(kEpochs).checkpoint_dir(damaged).resume("auto")),
      "resume auto: none of the 2 checkpoints in " + damaged.string() + " can be used:\n  ");
}

// Item 7: unusable output paths fail before the first step, naming the option.
TEST(Trainer, UnwritableOutputsFailBeforeTraining) {
  const fs::path directory = scratch_directory();
  const fs::path file = directory / "a-file";
  std::ofstream(file) << "x";
  EXPECT_ERROR_CONTAINS(
      train(TrainerOptions().checkpoint_dir(file)),
      "TrainerOptions::checkpoint_dir " + file.string() + ": expected a directory, found a file");
  EXPECT_ERROR_CONTAINS(train(TrainerOptions().checkpoint_dir(file / "below")),
                        "because " + file.string() + " is not a directory");
  EXPECT_ERROR_CONTAINS(train(TrainerOptions().metrics_path(file / "metrics.jsonl")),
                        "TrainerOptions::metrics_path " + (file / "metrics.jsonl").string());
  EXPECT_ERROR_CONTAINS(train(TrainerOptions().metrics_path(directory)),
                        "expected a file, found a directory");
  // /proc takes no new files, even from root, whom permissions do not stop.
  EXPECT_ERROR_CONTAINS(train(TrainerOptions().checkpoint_dir("/proc/minidl-checkpoints")),
                        "TrainerOptions::checkpoint_dir /proc/minidl-checkpoints: cannot be "
                        "created in /proc");
  EXPECT_FALSE(fs::exists(directory / "below"));
}

TEST(MetricsLog, ARunAppendsAfterTheLinesAlreadyThereAndKeepsThemAll) {
  const fs::path path = scratch_directory() / "metrics.jsonl";
  {
    MetricsLog log(path, "--metrics");
    for (int64_t epoch = 1; epoch <= 3; ++epoch) log.append(EpochMetrics{.epoch = epoch});
  }
  const std::string before = read_file(path);
  {
    MetricsLog log(path, "--metrics");  // a resumed run, or a new one: both append
    log.append(EpochMetrics{.epoch = 3, .step = 99});
  }
  const std::vector<std::string> lines = lines_of(path);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(read_file(path).substr(0, before.size()), before);
  EXPECT_EQ(lines[3], to_json(EpochMetrics{.epoch = 3, .step = 99}));
}

TEST(MetricsLog, AFileThatHoldsAnythingElseIsRefusedAndLeftAsItWas) {
  const fs::path directory = scratch_directory();
  const std::vector<std::pair<std::string, std::string>> files = {
      {"notes.txt", "remember the milk\n"},
      {"checkpoint.safetensors", std::string("\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":1}", 15)},
      {"other.json", "{\"epoch\": 1, \"loss\": 0.5}\n"},
      {"half-ours.jsonl", to_json(EpochMetrics{.epoch = 1}) + "\nnot ours\n"}};
  for (const auto& [name, bytes] : files) {
    const fs::path path = directory / name;
    write_file(path, bytes);
    EXPECT_ERROR_CONTAINS(MetricsLog(path, "--metrics"), "--metrics " + path.string() +
                                                             ": the file exists and is not a "
                                                             "metrics file (line ");
    EXPECT_ERROR_CONTAINS(check_metrics_file(path, "--metrics"), "give another path");
    EXPECT_EQ(read_file(path), bytes) << name;
  }
}

TEST(MetricsLog, ALineAKilledRunLeftHalfWrittenStaysOnALineOfItsOwn) {
  const fs::path path = scratch_directory() / "metrics.jsonl";
  const std::string torn = to_json(EpochMetrics{.epoch = 2}).substr(0, 20);
  write_file(path, to_json(EpochMetrics{.epoch = 1}) + "\n" + torn);
  {
    MetricsLog log(path, "--metrics");
    log.append(EpochMetrics{.epoch = 2});
  }
  EXPECT_EQ(lines_of(path), (std::vector<std::string>{to_json(EpochMetrics{.epoch = 1}), torn,
                                                      to_json(EpochMetrics{.epoch = 2})}));
  check_metrics_file(path, "--metrics");  // and the next run takes the file again
}

// For its lifetime, no file of this process grows past `bytes` (RLIMIT_FSIZE): a write beyond
// fails with EFBIG, as one on a full disk fails (SIGXFSZ, which would end the process, ignored).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(uintmax_t bytes) : previous_handler_(std::signal(SIGXFSZ, SIG_IGN)) {
    EXPECT_EQ(getrlimit(RLIMIT_FSIZE, &saved_), 0);
    rlimit limit = saved_;
    limit.rlim_cur = static_cast<rlim_t>(bytes);
    EXPECT_EQ(setrlimit(RLIMIT_FSIZE, &limit), 0);
  }
  ~FileSizeLimit() {
    EXPECT_EQ(setrlimit(RLIMIT_FSIZE, &saved_), 0);
    std::signal(SIGXFSZ, previous_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit saved_{};
  void (*previous_handler_)(int);
};

// The file size limit makes the metrics file (already at the limit) unwritable while a smaller
// checkpoint still fits: as on a disk that fills between the two writes.
TEST(Trainer, AMetricsLineThatCannotBeWrittenCostsNoCheckpoint) {
  const fs::path directory = scratch_directory();
  const fs::path metrics = directory / "metrics.jsonl";
  {
    MetricsLog log(metrics, "--metrics");
    for (int64_t epoch = 1; epoch <= 1000; ++epoch) log.append(EpochMetrics{.epoch = epoch});
  }
  {
    const FileSizeLimit limit(fs::file_size(metrics));
    EXPECT_ERROR_CONTAINS(
        train(TrainerOptions().epochs(1).checkpoint_dir(directory / "ckpt").metrics_path(metrics)),
        "metrics file " + metrics.string() + ": writing epoch 1's line failed (" +
            std::strerror(EFBIG) + ")");
  }
  EXPECT_EQ(list_checkpoints(directory / "ckpt"),
            std::vector<fs::path>{checkpoint_path(directory / "ckpt", kStepsPerEpoch)});
}

TEST(MetricsLog, AFailedWriteGivesTheSystemsReason) {
  const fs::path path = scratch_directory() / "metrics.jsonl";
  MetricsLog log(path, "--metrics");
  log.append(EpochMetrics{.epoch = 1});
  // The file may grow no further: the next write fails as on a full disk (EFBIG, not ENOSPC).
  const FileSizeLimit limit(fs::file_size(path));
  EXPECT_ERROR_CONTAINS(log.append(EpochMetrics{.epoch = 2}),
                        "metrics file " + path.string() + ": writing epoch 2's line failed (" +
                            std::strerror(EFBIG) + ")");
}

}  // namespace
}  // namespace minidl::train
