// ZeroRedundancyOptimizer (ZeRO-1) over MpiProcessGroup on CPU ranks, for minidl_zero_mpi_tests
// (mpi_tests.cmake: under mpirun with 2 and 4 ranks; every rank runs every test in order).
// Each test trains the same LeNet twice, with DDP and a plain optimizer and with DDP and the
// optimizer sharded, and compares the weights:
//  - the whole-parameter form (MpiZeroRedundancyOptimizer.*) asks for the same weights bit for
//    bit: it steps whole parameters with the optimizer's own kernels on DDP's averaged gradients
//    (Note [ZeRO shards whole parameters]), so no rounding may differ, whatever the world size;
//  - the reduce-scatter form (MpiZeroReduceScatter.*, Note [ZeRO's reduce-scatter form]) asks for
//    the same bits with 2 ranks and within 1e-6 relative with 4 (MPI may add the ranks'
//    gradients in another order for a reduce-scatter than for an all-reduce), and within 1e-6
//    with clipping (the norm adds the squares in another order). It runs over small buckets
//    (0.01 MiB: LeNet's 247 KB in 5 buckets), so that slices cut parameters and buckets.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "distributed/flat_parameters.h"
#include "distributed/same_on_every_rank.h"
#include "minidl/core/safetensors.h"
#include "minidl/distributed/distributed.h"
#include "minidl/models/lenet.h"
#include "minidl/nn/utils/clip_grad.h"
#include "minidl/ops/loss.h"
#include "minidl/ops/random.h"
#include "minidl/optim/optim.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::expect_same_on_every_rank;

using distributed::ZeroRedundancyOptimizer;
using distributed::ZeroRedundancyOptimizerOptions;
using distributed::ZeroSharding;
using testing::flat_parameters;
using OptimizerFactory = ZeroRedundancyOptimizer::OptimizerFactory;

constexpr double kSmallBucketsMiB = 0.01;

std::shared_ptr<distributed::ProcessGroup> group() { return distributed::default_process_group(); }

std::unique_ptr<optim::Optimizer> make_sgd(std::vector<optim::OptimizerParamGroup> groups) {
  return std::make_unique<optim::SGD>(
      std::move(groups), optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(1e-3));
}
std::unique_ptr<optim::Optimizer> make_adamw(std::vector<optim::OptimizerParamGroup> groups) {
  return std::make_unique<optim::AdamW>(std::move(groups),
                                        optim::AdamWOptions(2e-3).weight_decay(0.05));
}

// This rank's share of a Fashion-MNIST-shaped batch of step `step`.
Tensor images(int step) {
  return testing::wiggly({8, 1, 28, 28}, kFloat32,
                         {.phase = 0.1 * step + 0.7 * group()->rank(), .step = 0.0137});
}
Tensor labels(int step) {
  std::vector<int64_t> values;
  for (int64_t i = 0; i < 8; ++i) values.push_back((i * 7 + 3 * step + group()->rank()) % 10);
  return tensor(values);
}

// The same LeNet on every run (seeded), and its DDP wrapper.
struct Replica {
  explicit Replica(double bucket_cap_mb = 25.0)
      : model((manual_seed(11), models::LeNet())),
        ddp(model, distributed::DistributedDataParallelOptions().bucket_cap_mb(bucket_cap_mb)) {}
  models::LeNet model;
  distributed::DistributedDataParallel ddp;
};

// How one step is taken: plain, or with accumulation and a scaler, and with clipping.
struct Recipe {
  bool accumulate_and_scale = false;
  bool clip = false;
};

// The parameters in one group, or as the GPT trainer has them: matrices and kernels with weight
// decay, biases without (AdamW only).
std::vector<optim::OptimizerParamGroup> groups_of(const nn::Module& model, bool two_groups) {
  if (!two_groups) return {optim::OptimizerParamGroup(model.parameters())};
  std::vector<Tensor> decayed, undecayed;
  for (const auto& item : model.named_parameters())
    (item.value().dim() >= 2 ? decayed : undecayed).push_back(item.value());
  return {optim::OptimizerParamGroup(decayed),
          optim::OptimizerParamGroup(undecayed, optim::AdamWOptions(2e-3).weight_decay(0))};
}

// Clips as the Trainer does: a sharded optimizer knows the global norm of what it steps.
Tensor clip_gradients(Replica& replica, optim::Optimizer& optimizer, double max_norm) {
  if (auto* sharded = dynamic_cast<ZeroRedundancyOptimizer*>(&optimizer))
    return sharded->clip_grad_norm_(max_norm);
  return nn::utils::clip_grad_norm_(replica.model->parameters(), max_norm);
}

void train_steps(Replica& replica, optim::Optimizer& optimizer, int first, int count,
                 Recipe recipe = {}) {
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(256.0));
  for (int step = first; step < first + count; ++step) {
    optimizer.zero_grad();
    if (!recipe.accumulate_and_scale) {
      cross_entropy(replica.ddp(images(step)), labels(step)).backward();
      if (recipe.clip) clip_gradients(replica, optimizer, 0.5);
      optimizer.step();
      continue;
    }
    {  // the first micro-batch accumulates locally; the second averages the sum
      const auto local_only = replica.ddp.no_sync();
      scaler.scale(cross_entropy(replica.ddp(images(step)), labels(step))).backward();
    }
    scaler.scale(cross_entropy(replica.ddp(images(step + 100)), labels(step + 100))).backward();
    if (recipe.clip) {
      scaler.unscale_(optimizer);
      clip_gradients(replica, optimizer, 0.5);
    }
    scaler.step(optimizer);
    scaler.update();
  }
}

Tensor trained_unsharded(const OptimizerFactory& make_optimizer, int steps, Recipe recipe = {}) {
  Replica replica;
  const auto optimizer = make_optimizer({optim::OptimizerParamGroup(replica.model->parameters())});
  train_steps(replica, *optimizer, 0, steps, recipe);
  return flat_parameters(*replica.model);
}

Tensor trained_sharded(const OptimizerFactory& make_optimizer, int steps, Recipe recipe = {}) {
  Replica replica;
  ZeroRedundancyOptimizer optimizer(replica.model->parameters(), make_optimizer);
  train_steps(replica, optimizer, 0, steps, recipe);
  return flat_parameters(*replica.model);
}

TEST(MpiZeroRedundancyOptimizer, SgdWithMomentumIsBitIdenticalToDdp) {
  const Tensor sharded = trained_sharded(make_sgd, 4);
  EXPECT_TRUE(testing::bitwise_equal(sharded, trained_unsharded(make_sgd, 4)));
  expect_same_on_every_rank(sharded);
}

TEST(MpiZeroRedundancyOptimizer, AdamWIsBitIdenticalToDdp) {
  const Tensor sharded = trained_sharded(make_adamw, 4);
  EXPECT_TRUE(testing::bitwise_equal(sharded, trained_unsharded(make_adamw, 4)));
  expect_same_on_every_rank(sharded);
}

TEST(MpiZeroRedundancyOptimizer, AccumulationScalerAndClippingAreBitIdenticalToDdp) {
  const Recipe recipe{.accumulate_and_scale = true, .clip = true};
  const Tensor sharded = trained_sharded(make_adamw, 3, recipe);
  EXPECT_TRUE(testing::bitwise_equal(sharded, trained_unsharded(make_adamw, 3, recipe)));
  expect_same_on_every_rank(sharded);
}

TEST(MpiZeroRedundancyOptimizer, EachRankHoldsItsShareOfTheState) {
  Replica replica;
  ZeroRedundancyOptimizer optimizer(replica.model->parameters(), make_adamw);
  train_steps(replica, optimizer, 0, 1);
  const auto unsharded = make_adamw({optim::OptimizerParamGroup(replica.model->parameters())});
  train_steps(replica, *unsharded, 1, 1);
  size_t whole = 0, largest = 0;
  for (const Tensor& param : unsharded->parameters()) {
    size_t bytes = 0;
    for (const auto& entry : *unsharded->state(param)) bytes += entry.second.nbytes();
    whole += bytes;
    largest = std::max(largest, bytes);
  }
  const size_t mine = optimizer.local_state_bytes();
  const auto world = static_cast<size_t>(group()->size());
  // At most 1/N of the whole plus one parameter's state (Note [ZeRO shards whole parameters]).
  EXPECT_LE(mine, whole / world + largest) << "whole " << whole << ", largest " << largest;
  EXPECT_LT(mine, whole);
  // The shards add up to the whole: nothing is kept twice.
  Tensor total = tensor(std::vector<int64_t>{static_cast<int64_t>(mine)});
  group()->all_reduce(total);
  EXPECT_EQ(to_vector<int64_t>(total)[0], static_cast<int64_t>(whole));
}

// Parameters in the channels-last layout (not contiguous) travel through a contiguous copy.
TEST(MpiZeroRedundancyOptimizer, ChannelsLastParametersAreBroadcastInTheirLayout) {
  const auto make_parameters = [] {
    std::vector<Tensor> params;
    for (int i = 0; i < 4; ++i)
      params.push_back(testing::wiggly({8, 3, 3, 3}, 0.1 * i)
                           .contiguous(MemoryFormat::ChannelsLast)
                           .requires_grad_());
    return params;
  };
  const std::vector<Tensor> sharded_params = make_parameters(), plain_params = make_parameters();
  ZeroRedundancyOptimizer sharded(sharded_params, make_sgd);
  const auto plain = make_sgd({optim::OptimizerParamGroup(plain_params)});
  for (int step = 0; step < 2; ++step) {
    for (size_t i = 0; i < plain_params.size(); ++i) {
      // The same gradient on every rank, as DDP's average is.
      const Tensor grad = testing::wiggly({8, 3, 3, 3}, 0.3 * step + static_cast<double>(i))
                              .contiguous(MemoryFormat::ChannelsLast);
      Tensor a = sharded_params[i], b = plain_params[i];
      a.set_grad(grad.clone());
      b.set_grad(grad.clone());
    }
    sharded.step();
    plain->step();
  }
  for (size_t i = 0; i < plain_params.size(); ++i) {
    EXPECT_TRUE(sharded_params[i].is_contiguous(MemoryFormat::ChannelsLast)) << "parameter " << i;
    EXPECT_TRUE(testing::bitwise_equal(sharded_params[i], plain_params[i])) << "parameter " << i;
    expect_same_on_every_rank(sharded_params[i].contiguous().reshape({-1}));
  }
}

// A checkpoint through a file, as the trainers write it: rank 0 writes the whole state, every
// rank reads it.
optim::OptimizerStateDict through_a_file(optim::Optimizer& optimizer) {
  auto* sharded = dynamic_cast<ZeroRedundancyOptimizer*>(&optimizer);
  if (sharded != nullptr) sharded->consolidate_state_dict(0);
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("minidl_zero_resume_np" + std::to_string(group()->size()) + ".safetensors");
  if (group()->rank() == 0) {
    const optim::OptimizerStateDict state = optimizer.state_dict();
    serialize::write_safetensors(path, state.tensors("optimizer."),
                                 {{"optimizer", optim::to_json(state.scalars())}});
  }
  group()->barrier();
  const auto file = serialize::read_safetensors(path);
  group()->barrier();
  if (group()->rank() == 0) std::filesystem::remove(path);
  return optim::OptimizerStateDict::from_flat(
      file.tensors, optim::scalar_map_from_json(file.metadata.at("optimizer"), "optimizer"),
      "optimizer.");
}

TEST(MpiZeroRedundancyOptimizer, ResumesShardedThenUnshardedThenShardedAsAStraightRun) {
  const Tensor straight = trained_unsharded(make_adamw, 6);
  Replica replica;
  auto sharded = std::make_unique<ZeroRedundancyOptimizer>(replica.model->parameters(), make_adamw);
  train_steps(replica, *sharded, 0, 2);
  optim::OptimizerStateDict state = through_a_file(*sharded);
  // On one process: a plain optimizer over every parameter takes the whole state.
  auto unsharded = make_adamw({optim::OptimizerParamGroup(replica.model->parameters())});
  unsharded->load_state_dict(state);
  train_steps(replica, *unsharded, 2, 2);
  state = through_a_file(*unsharded);
  sharded = std::make_unique<ZeroRedundancyOptimizer>(replica.model->parameters(), make_adamw);
  sharded->load_state_dict(state);
  train_steps(replica, *sharded, 4, 2);
  EXPECT_TRUE(testing::bitwise_equal(flat_parameters(*replica.model), straight));
}

TEST(MpiZeroRedundancyOptimizer, ConsolidatedStateIsTheUnshardedOptimizers) {
  Replica replica;
  ZeroRedundancyOptimizer sharded(replica.model->parameters(), make_sgd);
  train_steps(replica, sharded, 0, 2);
  sharded.consolidate_state_dict(0);
  Replica twin;
  const auto unsharded = make_sgd({optim::OptimizerParamGroup(twin.model->parameters())});
  train_steps(twin, *unsharded, 0, 2);
  if (group()->rank() == 0) {
    const optim::OptimizerStateDict whole = sharded.state_dict();
    const optim::OptimizerStateDict expected = unsharded->state_dict();
    ASSERT_EQ(whole.state.size(), expected.state.size());
    for (const auto& [position, state] : expected.state)
      EXPECT_TRUE(testing::bitwise_equal(whole.state.at(position).at("momentum_buffer"),
                                         state.at("momentum_buffer")))
          << "position " << position;
    EXPECT_EQ(whole.scalars(), expected.scalars());
  } else {
    EXPECT_THROW((void)sharded.state_dict(), Error);  // gathered on rank 0 only
  }
  train_steps(replica, sharded, 2, 1);
  EXPECT_THROW((void)sharded.state_dict(), Error);  // stale after a step
}

// --- The reduce-scatter form (Note [ZeRO's reduce-scatter form]) ---

ZeroRedundancyOptimizerOptions reduce_scatter() {
  return ZeroRedundancyOptimizerOptions().sharding(ZeroSharding::ReduceScatter);
}

struct TrainingRun {
  OptimizerFactory make;
  int steps = 4;
  Recipe recipe = {};
  bool two_groups = false;
};

Tensor trained_by_ddp(const TrainingRun& run) {
  Replica replica(kSmallBucketsMiB);
  const auto optimizer = run.make(groups_of(*replica.model, run.two_groups));
  train_steps(replica, *optimizer, 0, run.steps, run.recipe);
  return flat_parameters(*replica.model);
}

Tensor trained_reduce_scattered(const TrainingRun& run) {
  Replica replica(kSmallBucketsMiB);
  ZeroRedundancyOptimizer optimizer(groups_of(*replica.model, run.two_groups), run.make,
                                    reduce_scatter());
  optimizer.attach(replica.ddp);
  train_steps(replica, optimizer, 0, run.steps, run.recipe);
  return flat_parameters(*replica.model);
}

// Bit for bit with 2 ranks (one addition per averaged element, whichever collective makes it),
// else within 1e-6 relative (absolute below 1e-2, as zero_resume_world_sizes.sh measures).
void expect_as_ddp(const Tensor& sharded, const Tensor& unsharded, bool bitwise_with_two = true) {
  if (group()->size() == 2 && bitwise_with_two)
    EXPECT_TRUE(testing::bitwise_equal(sharded, unsharded));
  else
    EXPECT_TRUE(testing::all_close(sharded, unsharded, /*atol=*/1e-8, /*rtol=*/1e-6));
  expect_same_on_every_rank(sharded);
}

TEST(MpiZeroReduceScatter, DdpBucketsAreSeveralAndCutInSlices) {
  Replica replica(kSmallBucketsMiB);
  ZeroRedundancyOptimizer optimizer(replica.model->parameters(), make_sgd, reduce_scatter());
  optimizer.attach(replica.ddp);
  EXPECT_EQ(replica.ddp.bucket_parameter_names().size(), 5u);
  EXPECT_EQ(optimizer.stepped_tensors().size(), 5u);   // one slice of each bucket
  EXPECT_THROW(optimizer.attach(replica.ddp), Error);  // once
}

TEST(MpiZeroReduceScatter, SgdWithMomentumMatchesDdp) {
  const TrainingRun run{.make = make_sgd};
  expect_as_ddp(trained_reduce_scattered(run), trained_by_ddp(run));
}

TEST(MpiZeroReduceScatter, AdamWWithTwoParamGroupsMatchesDdp) {
  const TrainingRun run{.make = make_adamw, .two_groups = true};
  expect_as_ddp(trained_reduce_scattered(run), trained_by_ddp(run));
}

TEST(MpiZeroReduceScatter, AccumulationAndTheScalerMatchDdp) {
  const TrainingRun run{.make = make_adamw, .steps = 3, .recipe = {.accumulate_and_scale = true}};
  expect_as_ddp(trained_reduce_scattered(run), trained_by_ddp(run));
}

TEST(MpiZeroReduceScatter, ClippingWithTheGlobalNormOfTheSlicesMatchesDdp) {
  for (const OptimizerFactory& make : {OptimizerFactory(make_sgd), OptimizerFactory(make_adamw)}) {
    const TrainingRun run{
        .make = make, .steps = 3, .recipe = {.accumulate_and_scale = true, .clip = true}};
    expect_as_ddp(trained_reduce_scattered(run), trained_by_ddp(run), /*bitwise_with_two=*/false);
  }
  // The norm itself: the same on every rank, and DDP's within rounding.
  Replica sharded_replica(kSmallBucketsMiB), ddp_replica(kSmallBucketsMiB);
  ZeroRedundancyOptimizer sharded(sharded_replica.model->parameters(), make_sgd, reduce_scatter());
  sharded.attach(sharded_replica.ddp);
  cross_entropy(sharded_replica.ddp(images(0)), labels(0)).backward();
  cross_entropy(ddp_replica.ddp(images(0)), labels(0)).backward();
  const Tensor norm = sharded.clip_grad_norm_(0.01);
  const Tensor expected = nn::utils::clip_grad_norm_(ddp_replica.model->parameters(), 0.01);
  EXPECT_TRUE(testing::all_close(norm, expected, 0.0, 1e-6));
  expect_same_on_every_rank(norm.reshape({1}));
  EXPECT_GT(norm.item<double>(), 0.01);  // so the gradients were scaled down
}

TEST(MpiZeroReduceScatter, EachRankHoldsOneNthOfTheState) {
  Replica replica(kSmallBucketsMiB);
  ZeroRedundancyOptimizer optimizer(replica.model->parameters(), make_adamw, reduce_scatter());
  optimizer.attach(replica.ddp);
  train_steps(replica, optimizer, 0, 1);
  Replica twin(kSmallBucketsMiB);
  const auto unsharded = make_adamw({optim::OptimizerParamGroup(twin.model->parameters())});
  train_steps(twin, *unsharded, 0, 1);
  size_t whole = 0;
  for (const Tensor& param : unsharded->parameters())
    for (const auto& entry : *unsharded->state(param)) whole += entry.second.nbytes();
  const size_t mine = optimizer.local_state_bytes();
  const auto world = static_cast<size_t>(group()->size());
  const size_t buckets = replica.ddp.bucket_parameter_names().size();
  // 1/N of the whole, plus per bucket at most N - 1 padding elements of each of the 2 moments
  // and one step count: far below the bound of 1/N plus one bucket.
  const size_t allowance = buckets * ((world - 1) * 2 * sizeof(float) + sizeof(float));
  EXPECT_LE(mine, whole / world + allowance) << "whole " << whole;
  size_t largest_bucket_state = 0;  // the moments of the largest bucket's parameters
  for (const auto& names : replica.ddp.bucket_parameter_names()) {
    size_t bytes = 0;
    for (const auto& item : replica.model->named_parameters())
      if (std::find(names.begin(), names.end(), item.key()) != names.end())
        bytes += 2 * item.value().nbytes();
    largest_bucket_state = std::max(largest_bucket_state, bytes);
  }
  EXPECT_LE(mine, whole / world + largest_bucket_state);
  // The ranks' states add up to the whole, but for the padding and for one step count per
  // slice instead of one per parameter: nothing is kept twice.
  size_t step_counts = 0;
  for (const Tensor& param : unsharded->parameters())
    step_counts += unsharded->state(param)->at("step").nbytes();
  Tensor total = tensor(std::vector<int64_t>{static_cast<int64_t>(mine)});
  group()->all_reduce(total);
  EXPECT_GE(to_vector<int64_t>(total)[0], static_cast<int64_t>(whole - step_counts));
  EXPECT_LE(to_vector<int64_t>(total)[0], static_cast<int64_t>(whole + world * allowance));
}

TEST(MpiZeroReduceScatter, ConsolidatedStateIsTheUnshardedOptimizers) {
  Replica replica(kSmallBucketsMiB);
  ZeroRedundancyOptimizer sharded(replica.model->parameters(), make_adamw, reduce_scatter());
  sharded.attach(replica.ddp);
  train_steps(replica, sharded, 0, 2);
  sharded.consolidate_state_dict(0);
  Replica twin(kSmallBucketsMiB);
  const auto unsharded = make_adamw({optim::OptimizerParamGroup(twin.model->parameters())});
  train_steps(twin, *unsharded, 0, 2);
  if (group()->rank() == 0) {
    const optim::OptimizerStateDict whole = sharded.state_dict();
    const optim::OptimizerStateDict expected = unsharded->state_dict();
    ASSERT_EQ(whole.state.size(), expected.state.size());
    for (const auto& [position, state] : expected.state) {
      ASSERT_EQ(whole.state.at(position).size(), state.size()) << "position " << position;
      for (const auto& [key, value] : state) {
        const Tensor& got = whole.state.at(position).at(key);
        if (group()->size() == 2)
          EXPECT_TRUE(testing::bitwise_equal(got, value)) << key << " of " << position;
        else
          EXPECT_TRUE(testing::all_close(got, value, 1e-12, 1e-5)) << key << " of " << position;
      }
    }
    EXPECT_EQ(whole.scalars(), expected.scalars());
  } else {
    EXPECT_THROW((void)sharded.state_dict(), Error);  // gathered on rank 0 only
  }
}

TEST(MpiZeroReduceScatter, ResumesShardedThenUnshardedThenShardedAsAStraightRun) {
  const Tensor straight = trained_by_ddp({.make = make_adamw, .steps = 6});
  // Each phase on a replica of its own (a DDP wrapper that reduce-scatters stays so), which
  // takes the weights of the one before.
  Replica first(kSmallBucketsMiB);
  auto sharded = std::make_unique<ZeroRedundancyOptimizer>(first.model->parameters(), make_adamw,
                                                           reduce_scatter());
  sharded->attach(first.ddp);
  train_steps(first, *sharded, 0, 2);
  optim::OptimizerStateDict state = through_a_file(*sharded);
  Replica second(kSmallBucketsMiB);
  second.model->load_state_dict(first.model->state_dict());
  auto unsharded = make_adamw({optim::OptimizerParamGroup(second.model->parameters())});
  unsharded->load_state_dict(state);
  train_steps(second, *unsharded, 2, 2);
  state = through_a_file(*unsharded);
  Replica third(kSmallBucketsMiB);
  third.model->load_state_dict(second.model->state_dict());
  sharded = std::make_unique<ZeroRedundancyOptimizer>(third.model->parameters(), make_adamw,
                                                      reduce_scatter());
  sharded->attach(third.ddp);
  sharded->load_state_dict(state);
  train_steps(third, *sharded, 4, 2);
  expect_as_ddp(flat_parameters(*third.model), straight);
}

TEST(MpiZeroReduceScatter, AStepNeedsAReduceScatteringBackward) {
  Replica replica(kSmallBucketsMiB);
  ZeroRedundancyOptimizer optimizer(replica.model->parameters(), make_sgd, reduce_scatter());
  EXPECT_THROW(optimizer.step(), Error);  // not attached
  optimizer.attach(replica.ddp);
  train_steps(replica, optimizer, 0, 1);
  EXPECT_THROW(optimizer.step(), Error);  // no backward since the last step
  {
    const auto local_only = replica.ddp.no_sync();
    cross_entropy(replica.ddp(images(1)), labels(1)).backward();
  }
  EXPECT_THROW(optimizer.step(), Error);  // gradients only accumulated
  cross_entropy(replica.ddp(images(2)), labels(2)).backward();
  optimizer.step();
  expect_same_on_every_rank(flat_parameters(*replica.model));
}

// The trainers' factories capture what is gone once the optimizer is made (train_gpt's options):
// attach() must not call the factory again.
TEST(MpiZeroReduceScatter, TheFactoryIsCalledOnlyByTheConstructor) {
  Replica replica(kSmallBucketsMiB);
  int calls = 0;
  ZeroRedundancyOptimizer optimizer(
      replica.model->parameters(),
      [&calls](std::vector<optim::OptimizerParamGroup> groups) {
        ++calls;
        return make_adamw(std::move(groups));
      },
      reduce_scatter());
  optimizer.attach(replica.ddp);
  train_steps(replica, optimizer, 0, 2);
  EXPECT_EQ(calls, 1);
  Replica twin(kSmallBucketsMiB);
  const auto unsharded = make_adamw({optim::OptimizerParamGroup(twin.model->parameters())});
  train_steps(twin, *unsharded, 0, 2);
  expect_as_ddp(flat_parameters(*replica.model), flat_parameters(*twin.model));
}

}  // namespace
}  // namespace minidl
