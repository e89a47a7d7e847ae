// train::Trainer with a ZeRO-1 optimizer in each form (the reduce-scatter form is what the
// trainers' --zero 1 gives) against the same Trainer with the plain optimizer (--zero 0), for
// minidl_zero_mpi_tests (mpirun with 2 and 4 CPU ranks): the same weights, with accumulation and
// clipping, and through a checkpoint the sharded run writes and a plain run resumes (and the
// other way round). The same bits for the whole-parameter form; within 1e-6 relative for the
// reduce-scatter form, whose clipping adds the squares of the gradients in another order (Note
// [ZeRO's reduce-scatter form]; without clipping it is bitwise with 2 ranks,
// tests/distributed/mpi/zero_mpi.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "distributed/flat_parameters.h"
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

constexpr int64_t kTrainSize = 128;

std::unique_ptr<optim::Optimizer> make_sgd(std::vector<optim::OptimizerParamGroup> groups) {
  return std::make_unique<optim::SGD>(std::move(groups),
                                      optim::SGDOptions(0.05).momentum(0.9).weight_decay(1e-4));
}

using distributed::ZeroSharding;

struct Run {
  std::optional<ZeroSharding> zero;  // none: the plain optimizer
  int64_t epochs = 2;
  std::filesystem::path checkpoint_dir;
  bool resume = false;
};

// The model's parameters after `run`, every parameter flattened into one float64 vector.
Tensor trained_parameters(const Run& run) {
  const int rank = distributed::rank(), world = distributed::world_size();
  manual_seed(7);
  nn::Sequential model{nn::Conv2d(1, 4, 3), nn::ReLU(), nn::Flatten(), nn::Linear(4 * 12 * 12, 10)};
  std::unique_ptr<optim::Optimizer> optimizer =
      run.zero ? std::make_unique<distributed::ZeroRedundancyOptimizer>(
                     model->parameters(), make_sgd,
                     distributed::ZeroRedundancyOptimizerOptions().sharding(*run.zero))
               : make_sgd({optim::OptimizerParamGroup(model->parameters())});
  const auto normalize = data::AugmentOptions().normalize({0.5f}, {0.25f});
  const auto dataset = data::make_synthetic_dataset(kTrainSize, {1, 14, 14}, 10, 1);
  auto sampler = std::make_shared<data::DistributedSampler>(
      kTrainSize, data::DistributedSamplerOptions(rank, world).shuffle(true).seed(3));
  data::DataLoader train_loader(dataset, sampler, data::DataLoaderOptions(8).augment(normalize));
  data::DataLoader test_loader(data::make_synthetic_dataset(64, {1, 14, 14}, 10, 2),
                               data::DataLoaderOptions(64).augment(normalize));
  TrainerOptions options = TrainerOptions()
                               .epochs(run.epochs)
                               .accumulate_steps(2)
                               .clip_grad_norm(0.2)
                               .progress(ProgressMode::kNone)
                               .handle_signals(false);
  if (!run.checkpoint_dir.empty())
    options.checkpoint_dir(run.checkpoint_dir)
        .resume(run.resume ? "auto" : "")
        .overwrite(!run.resume);
  Trainer trainer(model, *optimizer, train_loader, test_loader, options);
  trainer.fit();
  return testing::flat_parameters(*model);
}

::testing::AssertionResult same_weights(const Tensor& sharded, const Tensor& plain,
                                        ZeroSharding sharding) {
  if (sharding == ZeroSharding::WholeParameters)
    return testing::bitwise_equal(sharded, plain) ? ::testing::AssertionSuccess()
                                                  : ::testing::AssertionFailure() << "not bitwise";
  return testing::all_close(sharded, plain, /*atol=*/1e-8, /*rtol=*/1e-6);
}

TEST(MpiTrainerZero, ShardedOptimizerStateTrainsTheSameWeights) {
  const Tensor plain = trained_parameters({});
  for (const ZeroSharding sharding : {ZeroSharding::WholeParameters, ZeroSharding::ReduceScatter})
    EXPECT_TRUE(same_weights(trained_parameters({.zero = sharding}), plain, sharding))
        << distributed::zero_sharding_name(sharding);
}

TEST(MpiTrainerZero, CheckpointsMoveBetweenShardedAndUnshardedRuns) {
  const Tensor straight = trained_parameters({.epochs = 3});
  const auto group = distributed::default_process_group();
  for (const ZeroSharding sharding : {ZeroSharding::WholeParameters, ZeroSharding::ReduceScatter}) {
    const std::filesystem::path directory =
        std::filesystem::temp_directory_path() /
        ("minidl_trainer_zero_np" + std::to_string(group->size()));
    if (group->rank() == 0) std::filesystem::remove_all(directory);
    group->barrier();
    // Sharded for an epoch, unsharded for the next, sharded again for the last.
    (void)trained_parameters({.zero = sharding, .epochs = 1, .checkpoint_dir = directory});
    (void)trained_parameters({.epochs = 2, .checkpoint_dir = directory, .resume = true});
    const Tensor resumed = trained_parameters(
        {.zero = sharding, .epochs = 3, .checkpoint_dir = directory, .resume = true});
    EXPECT_TRUE(same_weights(resumed, straight, sharding))
        << distributed::zero_sharding_name(sharding);
    group->barrier();
    if (group->rank() == 0) std::filesystem::remove_all(directory);
  }
}

}  // namespace
}  // namespace minidl::train
