// train::Trainer's gradient accumulation under data parallelism, for minidl_distributed_mpi_tests
// (tests/distributed/mpi/mpi_tests.cmake lists its sources; every rank runs every test, under
// mpirun with 2 and 4 CPU ranks). Each rank trains its DistributedSampler shard in micro-batches;
// all but the last backward of a group run under DistributedDataParallel::no_sync(), and the
// last averages the accumulated sum over the ranks. The step must be the one batches twice as
// large take, and identical on every rank. (Averaging each micro-batch instead would give the
// same numbers, averaging being linear; what no_sync saves is communication, which this test
// does not count.)
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "distributed/flat_parameters.h"
#include "distributed/same_on_every_rank.h"
#include "minidl/data/dataloader.h"
#include "minidl/data/datasets/synthetic_dataset.h"
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

constexpr int64_t kTrainSize = 256;

// The model's parameters after two epochs on this rank's shard, flattened into one float64
// vector.
Tensor trained_parameters(TrainerOptions options, int64_t batch_size) {
  const int rank = distributed::rank(), world = distributed::world_size();
  manual_seed(7);
  nn::Sequential model{nn::Conv2d(1, 4, 3), nn::ReLU(), nn::Flatten(), nn::Linear(4 * 12 * 12, 10)};
  optim::SGD optimizer(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  const auto normalize = data::AugmentOptions().normalize({0.5f}, {0.25f});
  const auto dataset = data::make_synthetic_dataset(kTrainSize, {1, 14, 14}, 10, 1);
  auto sampler = std::make_shared<data::DistributedSampler>(
      kTrainSize, data::DistributedSamplerOptions(rank, world).shuffle(true).seed(3));
  data::DataLoader train_loader(dataset, sampler,
                                data::DataLoaderOptions(batch_size).augment(normalize));
  data::DataLoader test_loader(data::make_synthetic_dataset(64, {1, 14, 14}, 10, 2),
                               data::DataLoaderOptions(64).augment(normalize));
  Trainer trainer(model, optimizer, train_loader, test_loader,
                  options.epochs(2).progress(ProgressMode::kNone).handle_signals(false));
  trainer.fit();
  return testing::flat_parameters(*model);
}

TEST(MpiTrainerAccumulation, MicroBatchesOnEveryRankStepAsBatchesTwiceAsLarge) {
  const Tensor accumulated = trained_parameters(TrainerOptions().accumulate_steps(2), 8);
  const Tensor whole = trained_parameters(TrainerOptions(), 16);
  EXPECT_TRUE(testing::all_close(accumulated, whole, 1e-6, 1e-5));
  expect_same_on_every_rank(accumulated);
  // Clipping under data parallelism clips the averaged gradients, the same on every rank.
  expect_same_on_every_rank(
      trained_parameters(TrainerOptions().accumulate_steps(2).clip_grad_norm(0.1), 8));
}

}  // namespace
}  // namespace minidl::train
