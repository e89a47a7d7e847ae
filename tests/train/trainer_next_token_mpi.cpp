// train::Trainer with the NextToken objective under data parallelism, for
// minidl_distributed_mpi_tests (tests/distributed/mpi/mpi_tests.cmake lists its sources; every
// rank runs every test, under mpirun with 2 and 4 CPU ranks). Each rank trains its
// DistributedSampler share of every epoch's random token windows; DistributedDataParallel
// averages the gradients, so every rank ends with the same weights, the model learns, and two
// accumulated micro-batches step as one batch twice as large.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "distributed/flat_parameters.h"
#include "distributed/same_on_every_rank.h"
#include "minidl/data/dataloader.h"
#include "minidl/data/datasets/token_window_dataset.h"
#include "minidl/data/samplers/distributed_sampler.h"
#include "minidl/distributed/distributed.h"
#include "minidl/nn/nn.h"
#include "minidl/ops/random.h"
#include "minidl/optim/optim.h"
#include "minidl/train/trainer.h"
#include "test_util.h"

namespace minidl::train {
namespace {

using testing::expect_same_on_every_rank;

constexpr int64_t kVocab = 16;
constexpr int64_t kBlock = 8;
constexpr int64_t kWindowsPerEpoch = 192;  // divisible by 2 and 4 ranks and their batches

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
  Tensor parameters;  // flattened, float64
};

Outcome train(TrainerOptions options, int64_t batch_size) {
  const int rank = distributed::rank(), world = distributed::world_size();
  manual_seed(11);
  nn::Sequential model{nn::Embedding(kVocab, 16), nn::Linear(16, kVocab)};
  optim::AdamW optimizer(model->parameters(), optim::AdamWOptions(5e-2).betas({0.9, 0.99}));
  auto train_set = std::make_shared<data::TokenWindowDataset>(
      walk_tokens(4000), data::TokenWindowOptions(kBlock).seed(5).epoch_size(kWindowsPerEpoch));
  auto sampler = std::make_shared<data::DistributedSampler>(
      kWindowsPerEpoch, data::DistributedSamplerOptions(rank, world).shuffle(false));
  data::DataLoader train_loader(train_set, sampler, data::DataLoaderOptions(batch_size));
  auto val_set = std::make_shared<data::TokenWindowDataset>(
      walk_tokens(600),
      data::TokenWindowOptions(kBlock).placement(data::WindowPlacement::Consecutive));
  data::DataLoader test_loader(val_set, data::DataLoaderOptions(8));
  Trainer trainer(model, optimizer, train_loader, test_loader,
                  options.epochs(2)
                      .objective(std::make_shared<NextToken>())
                      .eval_batches(4)
                      .progress(ProgressMode::kNone)
                      .handle_signals(false));
  Outcome outcome{trainer.fit(), {}};
  outcome.parameters = testing::flat_parameters(*model);
  return outcome;
}

TEST(MpiTrainerNextToken, EveryRankEndsWithTheSameLearnedWeights) {
  const Outcome whole = train(TrainerOptions().clip_grad_norm(1.0), 8);
  expect_same_on_every_rank(whole.parameters);
  EXPECT_LT(whole.result.test.loss, 0.5 * std::log(static_cast<double>(kVocab)));
  // The tokens of every rank count: the global number trained.
  EXPECT_EQ(whole.result.tokens_trained, 2 * kWindowsPerEpoch * kBlock);
  const Outcome accumulated = train(TrainerOptions().clip_grad_norm(1.0).accumulate_steps(2), 4);
  EXPECT_TRUE(testing::all_close(accumulated.parameters, whole.parameters, 1e-5, 1e-4));
  expect_same_on_every_rank(accumulated.parameters);
}

}  // namespace
}  // namespace minidl::train
