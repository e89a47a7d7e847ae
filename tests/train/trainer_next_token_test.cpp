// train::Trainer with the NextToken objective (Note [Objectives] in train/trainer.h) on the CPU:
// a tiny next-token model on a made-up token file learns (its loss falls well below ln V), a
// resumed run continues bit for bit, two accumulated micro-batches step as one batch twice as
// large, evaluations read at most eval_batches batches and count tokens, and batches or logits
// of the wrong kind are clear errors. The model is a stand-in with a GPT's interface
// (int64 [B, T] -> logits [B, T, V]): an embedding and a linear layer.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "minidl/core/generator.h"
#include "minidl/data/dataloader.h"
#include "minidl/data/datasets/synthetic_dataset.h"
#include "minidl/data/datasets/token_window_dataset.h"
#include "minidl/data/readers/token_file.h"
#include "minidl/nn/nn.h"
#include "minidl/ops/random.h"
#include "minidl/optim/optim.h"
#include "minidl/train/trainer.h"
#include "minidl/train/training_checkpoint.h"
#include "test_util.h"

namespace minidl::train {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kVocab = 16;
constexpr int64_t kBlock = 8;
constexpr int64_t kBatch = 8;
constexpr int64_t kStepsPerEpoch = 20;  // epoch_size = kStepsPerEpoch * kBatch windows
constexpr int64_t kEpochs = 2;
constexpr int64_t kEvalBatches = 2;

fs::path scratch_directory() {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path directory =
      fs::temp_directory_path() / "minidl-trainer-next-token-test" / test->name();
  fs::remove_all(directory);
  fs::create_directories(directory);
  return directory;
}

// A made-up text whose next token is mostly decided by the current one: a walk that steps by 1,
// 3 or 5 (mod kVocab), the step chosen by a fixed cycle. Written to an llm.c token file and read
// back, as train_gpt reads its data.
std::vector<uint16_t> made_up_tokens(int64_t count, const fs::path& path) {
  std::vector<uint16_t> tokens;
  int64_t token = 0;
  for (int64_t i = 0; i < count; ++i) {
    tokens.push_back(static_cast<uint16_t>(token));
    token = (token + 1 + 2 * ((i * 7) % 3 == 0 ? 1 : 0)) % kVocab;
  }
  data::write_token_file(path, tokens);
  return data::read_token_file(path, kVocab);
}

// A GPT's interface without a GPT: tokens [B, T] -> logits [B, T, V].
nn::Sequential next_token_model() {
  return nn::Sequential{nn::Embedding(kVocab, 16), nn::Linear(16, kVocab)};
}

struct RunSetup {
  int64_t batch_size = kBatch;
  int64_t steps_per_epoch = kStepsPerEpoch;  // optimizer steps: epoch_size counts windows
  int64_t accumulate_steps = 1;
};

struct Outcome {
  TrainingResult result;
  std::vector<Tensor> state;
  Evaluation before;  // the untrained model's evaluation
};

Outcome train(TrainerOptions options, const RunSetup& setup = {}) {
  static const fs::path data_directory = [] {
    const fs::path directory = fs::temp_directory_path() / "minidl-trainer-next-token-data";
    fs::create_directories(directory);
    return directory;
  }();
  const std::vector<uint16_t> train_tokens = made_up_tokens(4000, data_directory / "train.bin");
  const std::vector<uint16_t> val_tokens = made_up_tokens(600, data_directory / "val.bin");
  manual_seed(11);
  nn::Sequential model = next_token_model();
  // nanoGPT's groups: weight decay on the matrices, none on the biases.
  std::vector<Tensor> decayed, undecayed;
  for (const Tensor& parameter : model->parameters())
    (parameter.dim() >= 2 ? decayed : undecayed).push_back(parameter);
  optim::AdamW optimizer(
      {optim::OptimizerParamGroup(decayed, optim::AdamWOptions(5e-2).weight_decay(0.1)),
       optim::OptimizerParamGroup(undecayed, optim::AdamWOptions(5e-2).weight_decay(0))},
      optim::AdamWOptions(5e-2).betas({0.9, 0.99}));
  const int64_t total_steps = kEpochs * setup.steps_per_epoch;
  optim::WarmupCosineLR schedule(optimizer, 3, total_steps, 1e-3);
  const int64_t windows_per_step = setup.batch_size * setup.accumulate_steps;
  auto train_set = std::make_shared<data::TokenWindowDataset>(
      train_tokens, data::TokenWindowOptions(kBlock).seed(5).epoch_size(setup.steps_per_epoch *
                                                                        windows_per_step));
  auto val_set = std::make_shared<data::TokenWindowDataset>(
      val_tokens, data::TokenWindowOptions(kBlock).placement(data::WindowPlacement::Consecutive));
  data::DataLoader train_loader(train_set, data::DataLoaderOptions(setup.batch_size));
  data::DataLoader test_loader(val_set, data::DataLoaderOptions(kBatch));
  Trainer trainer(model, optimizer, train_loader, test_loader,
                  options.objective(std::make_shared<NextToken>())
                      .eval_batches(kEvalBatches)
                      .accumulate_steps(setup.accumulate_steps)
                      .progress(ProgressMode::kNone)
                      .model_name("bigram")
                      .dataset_name("walk"));
  trainer.set_scheduler(&schedule);
  Outcome outcome;
  outcome.before = trainer.evaluate();
  outcome.result = trainer.fit();
  for (const auto& item : model->state_dict()) outcome.state.push_back(item.value().clone());
  return outcome;
}

void expect_same_weights(const Outcome& actual, const Outcome& expected) {
  ASSERT_EQ(actual.state.size(), expected.state.size());
  for (size_t i = 0; i < expected.state.size(); ++i)
    EXPECT_TRUE(testing::bitwise_equal(actual.state[i], expected.state[i])) << "state entry " << i;
}

TEST(TrainerNextToken, ATinyModelLearnsTheMadeUpTextAndCountsTokens) {
  const fs::path directory = scratch_directory();
  const Outcome outcome =
      train(TrainerOptions().epochs(kEpochs).metrics_path(directory / "metrics.jsonl"));
  const double uniform = std::log(static_cast<double>(kVocab));
  EXPECT_NEAR(outcome.before.loss, uniform, 0.5);  // about ln V untrained
  // The walk's next token is one of three, mostly one: far below ln 16 = 2.77.
  EXPECT_LT(outcome.result.test.loss, 1.2);
  EXPECT_GT(outcome.result.test.accuracy, 0.5);
  ASSERT_EQ(outcome.result.history.size(), 2u);
  EXPECT_LT(outcome.result.history[1].train_loss, outcome.result.history[0].train_loss);
  EXPECT_EQ(outcome.result.steps, kEpochs * kStepsPerEpoch);
  // Evaluations read eval_batches batches and average over their target tokens.
  EXPECT_EQ(outcome.result.test.samples, kEvalBatches * kBatch);
  EXPECT_EQ(outcome.result.test.units, kEvalBatches * kBatch * kBlock);
  EXPECT_EQ(outcome.result.tokens_trained, kEpochs * kStepsPerEpoch * kBatch * kBlock);
  EXPECT_GT(outcome.result.train_tokens_per_sec, 0);
  EXPECT_GT(outcome.result.history[0].tokens_per_sec, 0);
  std::ifstream metrics(directory / "metrics.jsonl");
  std::string line;
  ASSERT_TRUE(std::getline(metrics, line));
  EXPECT_NE(line.find("\"tokens_per_sec\":"), std::string::npos) << line;
}

TEST(TrainerNextToken, ResumingAfterAnEpochContinuesBitForBit) {
  const fs::path directory = scratch_directory();
  const Outcome straight = train(TrainerOptions().epochs(kEpochs));
  const Outcome first = train(TrainerOptions().epochs(1).checkpoint_dir(directory));
  EXPECT_EQ(first.result.last_checkpoint, checkpoint_path(directory, kStepsPerEpoch));
  const Outcome second =
      train(TrainerOptions().epochs(kEpochs).checkpoint_dir(directory).resume("auto"));
  ASSERT_EQ(second.result.history.size(), 1u);
  EXPECT_EQ(second.result.steps, kEpochs * kStepsPerEpoch);
  expect_same_weights(second, straight);
  EXPECT_EQ(second.result.history[0].train_loss, straight.result.history[1].train_loss);
  EXPECT_EQ(second.result.history[0].test_loss, straight.result.history[1].test_loss);
  EXPECT_EQ(second.result.history[0].test_accuracy, straight.result.history[1].test_accuracy);
  EXPECT_EQ(second.result.history[0].lr, straight.result.history[1].lr);
}

TEST(TrainerNextToken, ResumingMidEpochAfterMaxStepsContinuesBitForBit) {
  const fs::path directory = scratch_directory();
  const Outcome straight = train(TrainerOptions().epochs(kEpochs));
  train(TrainerOptions().epochs(kEpochs).max_steps(kStepsPerEpoch + 3).checkpoint_dir(directory));
  const Outcome rest =
      train(TrainerOptions().epochs(kEpochs).checkpoint_dir(directory).resume("auto"));
  EXPECT_EQ(rest.result.steps, kEpochs * kStepsPerEpoch);
  expect_same_weights(rest, straight);
  EXPECT_EQ(rest.result.history.back().train_loss, straight.result.history.back().train_loss);
}

TEST(TrainerNextToken, Bfloat16LearnsAndResumesBitForBit) {
  const fs::path directory = scratch_directory();
  const auto bf16 = [] { return TrainerOptions().precision(kBFloat16); };
  const Outcome straight = train(bf16().epochs(kEpochs));
  EXPECT_LT(straight.result.test.loss, 1.2);
  train(bf16().epochs(1).checkpoint_dir(directory));
  const Outcome resumed = train(bf16().epochs(kEpochs).checkpoint_dir(directory).resume("auto"));
  expect_same_weights(resumed, straight);
  EXPECT_EQ(resumed.result.history.back().test_loss, straight.result.history.back().test_loss);
  EXPECT_EQ(resumed.result.history.back().precision, "bf16");
}

TEST(TrainerNextToken, TwoMicroBatchesStepAsOneBatchTwiceAsLarge) {
  const Outcome accumulated = train(TrainerOptions().epochs(kEpochs),
                                    RunSetup{.batch_size = kBatch / 2, .accumulate_steps = 2});
  const Outcome whole = train(TrainerOptions().epochs(kEpochs));
  EXPECT_EQ(accumulated.result.steps, kEpochs * kStepsPerEpoch);
  ASSERT_EQ(accumulated.state.size(), whole.state.size());
  for (size_t i = 0; i < whole.state.size(); ++i)
    EXPECT_TRUE(testing::all_close(accumulated.state[i], whole.state[i], 1e-5, 1e-4))
        << "state entry " << i;
  EXPECT_NEAR(accumulated.result.history[1].train_loss, whole.result.history[1].train_loss, 1e-5);
  // Accumulation does change the step: one half batch per step is another run.
  const Outcome halves =
      train(TrainerOptions().epochs(kEpochs), RunSetup{.batch_size = kBatch / 2});
  EXPECT_FALSE(testing::all_close(halves.state[0], whole.state[0], 1e-4, 1e-3));
}

TEST(TrainerNextToken, ClippingChangesTheStepsAndStillLearns) {
  const Outcome clipped = train(TrainerOptions().epochs(kEpochs).clip_grad_norm(0.05));
  EXPECT_LT(clipped.result.test.loss, 1.5);
  const Outcome unclipped = train(TrainerOptions().epochs(kEpochs));
  EXPECT_FALSE(testing::all_close(clipped.state[0], unclipped.state[0], 1e-6, 1e-6));
}

TEST(TrainerNextToken, EvalBatchesZeroReadsTheWholeTestLoader) {
  manual_seed(1);
  nn::Sequential model = next_token_model();
  optim::SGD optimizer(model->parameters(), optim::SGDOptions(0.1));
  const fs::path directory = scratch_directory();
  auto val_set = std::make_shared<data::TokenWindowDataset>(
      made_up_tokens(600, directory / "val.bin"),
      data::TokenWindowOptions(kBlock).placement(data::WindowPlacement::Consecutive));
  data::DataLoader loader(val_set, data::DataLoaderOptions(kBatch));
  Trainer all(model, optimizer, loader, loader,
              TrainerOptions().objective(std::make_shared<NextToken>()));
  const Evaluation whole = all.evaluate();
  EXPECT_EQ(whole.samples, val_set->size());
  EXPECT_EQ(whole.units, val_set->size() * kBlock);
  Trainer one(model, optimizer, loader, loader,
              TrainerOptions().objective(std::make_shared<NextToken>()).eval_batches(1));
  EXPECT_EQ(one.evaluate().units, kBatch * kBlock);
  // More batches than the loader has: all of them.
  Trainer many(model, optimizer, loader, loader,
               TrainerOptions().objective(std::make_shared<NextToken>()).eval_batches(1000));
  const Evaluation capped = many.evaluate();
  EXPECT_EQ(capped.units, whole.units);
  EXPECT_EQ(capped.loss, whole.loss);
}

TEST(TrainerNextToken, RejectsBatchesLogitsAndOptionsOfTheWrongKind) {
  manual_seed(1);
  nn::Sequential model = next_token_model();
  optim::SGD optimizer(model->parameters(), optim::SGDOptions(0.1));
  // Images, not token windows.
  const auto images = data::make_synthetic_dataset(16, {1, 4, 4}, 10, 1);
  data::DataLoader image_loader(images, data::DataLoaderOptions(8).augment(
                                            data::AugmentOptions().normalize({0.5f}, {0.25f})));
  Trainer on_images(
      model, optimizer, image_loader, image_loader,
      TrainerOptions().objective(std::make_shared<NextToken>()).progress(ProgressMode::kNone));
  EXPECT_ERROR_CONTAINS(on_images.fit(),
                        "Trainer (NextToken): expected batches of token windows, int64 "
                        "[B, 1, 1, T + 1]");
  // A model whose logits are not [B, T, V].
  const fs::path directory = scratch_directory();
  auto windows = std::make_shared<data::TokenWindowDataset>(
      made_up_tokens(200, directory / "t.bin"), data::TokenWindowOptions(kBlock));
  data::DataLoader window_loader(windows, data::DataLoaderOptions(4));
  nn::Sequential flat{nn::Embedding(kVocab, 4), nn::Flatten(), nn::Linear(4 * kBlock, kVocab)};
  optim::SGD flat_optimizer(flat->parameters(), optim::SGDOptions(0.1));
  Trainer wrong_logits(
      flat, flat_optimizer, window_loader, window_loader,
      TrainerOptions().objective(std::make_shared<NextToken>()).progress(ProgressMode::kNone));
  EXPECT_ERROR_CONTAINS(wrong_logits.fit(),
                        "Trainer (NextToken): expected the model's logits [B, T, V] = [4, 8, V] "
                        "for inputs [B, T], got [4, 16]");
  // Options that do not go with an objective, or at all.
  EXPECT_ERROR_CONTAINS(
      Trainer(model, optimizer, window_loader, window_loader,
              TrainerOptions().objective(std::make_shared<NextToken>()).label_smoothing(0.1)),
      "Trainer: expected label_smoothing 0 with the NextToken objective");
  EXPECT_ERROR_CONTAINS(
      Trainer(model, optimizer, window_loader, window_loader, TrainerOptions().eval_batches(-1)),
      "Trainer: expected eval_batches >= 0 (0: the whole test loader), got -1");
  // And the default objective still asks for float images.
  Trainer classifier(model, optimizer, window_loader, window_loader,
                     TrainerOptions().progress(ProgressMode::kNone));
  EXPECT_ERROR_CONTAINS(classifier.fit(), "Trainer: expected float images from the loader");
}

}  // namespace
}  // namespace minidl::train
