// The Trainer's TensorBoard events (TrainerOptions::tensorboard_dir): after each evaluation the
// metrics line's values, the same numbers as the metrics file holds (rounded to float32, as
// TensorBoard stores them), every log_every() steps the running loss, lr and gradient norm, and
// the histograms when due; rank 0 alone writes (tests/train/trainer_next_token_mpi.cpp runs
// ranks).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "event_file_reader.h"
#include "minidl/minidl.h"
#include "test_util.h"

namespace minidl {
namespace {

namespace fs = std::filesystem;
using train::Trainer;
using train::TrainerOptions;

fs::path scratch_directory() {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path directory =
      fs::temp_directory_path() / "minidl-trainer-tensorboard" / test->name();
  fs::remove_all(directory);
  fs::create_directories(directory);
  return directory;
}

// Two epochs of 8 steps of a linear classifier on noise, clipped.
void train(const TrainerOptions& options) {
  manual_seed(5);
  nn::Sequential model{nn::Flatten(), nn::Linear(1 * 6 * 6, 10)};
  optim::SGD optimizer(model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  const auto normalize = data::AugmentOptions().normalize({0.5f}, {0.25f});
  data::DataLoader train_loader(
      data::make_synthetic_dataset(256, {1, 6, 6}, 10, 1),
      data::DataLoaderOptions(32).shuffle(true).seed(3).augment(normalize));
  data::DataLoader test_loader(data::make_synthetic_dataset(64, {1, 6, 6}, 10, 2),
                               data::DataLoaderOptions(32).augment(normalize));
  Trainer trainer(model, optimizer, train_loader, test_loader,
                  TrainerOptions(options).epochs(2).log_every(4).clip_grad_norm(0.5).progress(
                      train::ProgressMode::kNone));
  trainer.fit();
}

fs::path only_event_file(const fs::path& directory) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(directory)) files.push_back(entry.path());
  EXPECT_EQ(files.size(), 1u);
  return files.empty() ? fs::path() : files.front();
}

TEST(TrainerTensorBoard, EveryMetricsValueAtItsStepAndTheStepScalars) {
  const fs::path directory = scratch_directory();
  train(TrainerOptions()
            .metrics_path(directory / "metrics.jsonl")
            .tensorboard_dir(directory / "tb")
            .tensorboard_histogram_every(1));
  const auto scalars = testing::read_scalars(only_event_file(directory / "tb"));

  std::vector<nlohmann::json> lines;
  std::ifstream metrics(directory / "metrics.jsonl");
  for (std::string line; std::getline(metrics, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 2u);
  const std::pair<const char*, const char*> tags[] = {
      {"loss/train", "train_loss"},
      {"loss/test", "test_loss"},
      {"accuracy/test", "test_accuracy"},
      {"lr", "lr"},
      {"throughput/images_per_sec", "images_per_sec"}};
  for (const auto& [tag, key] : tags) {
    SCOPED_TRACE(tag);
    ASSERT_EQ(scalars.count(tag), 1u);
    const auto& values = scalars.at(tag);
    ASSERT_EQ(values.size(), lines.size());
    for (size_t i = 0; i < lines.size(); ++i) {
      EXPECT_EQ(values[i].first, lines[i]["step"].get<int64_t>());
      EXPECT_EQ(values[i].second, static_cast<float>(lines[i][key].get<double>()));
    }
  }
  EXPECT_EQ(scalars.count("throughput/tokens_per_sec"), 0u) << "a classifier has no tokens";
  // Steps 4, 8, 12 and 16 of 16: the running loss, the lr and the clipped norm.
  for (const char* tag : {"step/train_loss", "step/lr", "step/grad_norm"}) {
    SCOPED_TRACE(tag);
    ASSERT_EQ(scalars.count(tag), 1u);
    std::vector<int64_t> steps;
    for (const auto& [step, value] : scalars.at(tag)) {
      steps.push_back(step);
      EXPECT_TRUE(std::isfinite(value) && value > 0) << value;
    }
    EXPECT_EQ(steps, (std::vector<int64_t>{4, 8, 12, 16}));
  }
  EXPECT_EQ(scalars.count("step/grad_scale"), 0u) << "float32 has no loss scale";
  // The epoch's last step: the running loss is the epoch's train loss.
  EXPECT_EQ(scalars.at("step/train_loss")[1].second, scalars.at("loss/train")[0].second);

  // Histograms of the weight and bias and their gradients, after each of the 2 evaluations.
  int64_t histograms = 0;
  for (const std::string& record : testing::read_records(only_event_file(directory / "tb"))) {
    const auto event = testing::decode(record);
    if (event.count(5) == 0) continue;
    std::string tag;
    if (testing::summary_value(event, tag).count(5) == 1) {
      ++histograms;
      EXPECT_TRUE(tag.rfind("weights/", 0) == 0 || tag.rfind("grads/", 0) == 0) << tag;
    }
  }
  EXPECT_EQ(histograms, 2 * 4);
}

TEST(TrainerTensorBoard, NoFolderNoFilesAndABadOptionIsAnError) {
  const fs::path directory = scratch_directory();
  train(TrainerOptions().metrics_path(directory / "metrics.jsonl"));
  EXPECT_FALSE(fs::exists(directory / "tb"));
  EXPECT_THROW(
      train(TrainerOptions().tensorboard_dir(directory / "tb").tensorboard_histogram_every(-1)),
      Error);
  std::ofstream(directory / "file") << "x";
  EXPECT_THROW(train(TrainerOptions().tensorboard_dir(directory / "file" / "tb")), Error);
}

}  // namespace
}  // namespace minidl
