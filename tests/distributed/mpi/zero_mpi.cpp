// ZeroRedundancyOptimizer (ZeRO-1) over MpiProcessGroup on CPU ranks, for minidl_zero_mpi_tests
// (mpi_tests.cmake: under mpirun with 2 and 4 ranks; every rank runs every test in order).
// Each test trains the same LeNet twice, with DDP and a plain optimizer and with DDP and the
// optimizer sharded, and asks for the same weights bit for bit: ZeRO shards whole parameters
// and steps each with the optimizer's own kernels on DDP's averaged gradients (Note [ZeRO shards
// whole parameters]), so no rounding may differ, whatever the world size.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

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

using distributed::ZeroRedundancyOptimizer;
using OptimizerFactory = ZeroRedundancyOptimizer::OptimizerFactory;

std::shared_ptr<distributed::ProcessGroup> group() { return distributed::default_process_group(); }

std::unique_ptr<optim::Optimizer> make_sgd(std::vector<optim::OptimizerParamGroup> groups) {
  return std::make_unique<optim::SGD>(
      std::move(groups), optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(1e-3));
}
std::unique_ptr<optim::Optimizer> make_adamw(std::vector<optim::OptimizerParamGroup> groups) {
  return std::make_unique<optim::AdamW>(std::move(groups),
                                        optim::AdamWOptions(2e-3).weight_decay(0.05));
}

Tensor flat_parameters(const nn::Module& module) {
  std::vector<double> values;
  for (const Tensor& p : module.parameters()) {
    const std::vector<double> v = to_vector<double>(p);
    values.insert(values.end(), v.begin(), v.end());
  }
  return from_host(values.data(), {static_cast<int64_t>(values.size())}, kFloat64);
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
  Replica() : model((manual_seed(11), models::LeNet())), ddp(model) {}
  models::LeNet model;
  distributed::DistributedDataParallel ddp;
};

// How one step is taken: plain, or with accumulation, a scaler and clipping.
struct Recipe {
  bool accumulate_and_clip = false;
};

void train_steps(Replica& replica, optim::Optimizer& optimizer, int first, int count,
                 Recipe recipe = {}) {
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(256.0));
  for (int step = first; step < first + count; ++step) {
    optimizer.zero_grad();
    if (!recipe.accumulate_and_clip) {
      cross_entropy(replica.ddp(images(step)), labels(step)).backward();
      optimizer.step();
      continue;
    }
    {  // the first micro-batch accumulates locally; the second averages the sum
      const auto local_only = replica.ddp.no_sync();
      scaler.scale(cross_entropy(replica.ddp(images(step)), labels(step))).backward();
    }
    scaler.scale(cross_entropy(replica.ddp(images(step + 100)), labels(step + 100))).backward();
    scaler.unscale_(optimizer);
    nn::utils::clip_grad_norm_(replica.model->parameters(), 0.5);
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

void expect_same_on_every_rank(const Tensor& local) {
  const int world = group()->size();
  Tensor gathered = zeros({local.numel() * world}, local.dtype());
  group()->all_gather(gathered, local.contiguous());
  for (int r = 1; r < world; ++r)
    EXPECT_TRUE(testing::bitwise_equal(gathered.narrow(0, r * local.numel(), local.numel()),
                                       gathered.narrow(0, 0, local.numel())))
        << "rank " << r << " differs from rank 0";
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
  const Recipe recipe{.accumulate_and_clip = true};
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

}  // namespace
}  // namespace minidl
