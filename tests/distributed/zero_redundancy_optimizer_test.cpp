// ZeroRedundancyOptimizer in one process: on a group of one it is the wrapped optimizer, bit for
// bit; on a stand-in rank of a larger group (no collectives needed) it keeps that rank's share
// of the parameters and of a loaded state; and its errors. The ranks talking to each other are
// tested under mpirun (tests/distributed/mpi/zero_mpi.cpp).
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <vector>

#include "distributed/stand_in_group.h"
#include "minidl/distributed/distributed.h"
#include "minidl/ops/random.h"
#include "minidl/optim/optim.h"
#include "test_util.h"

namespace minidl {
namespace {

using distributed::ZeroRedundancyOptimizer;
using distributed::ZeroRedundancyOptimizerOptions;

using testing::StandInGroup;

std::unique_ptr<optim::Optimizer> make_sgd(std::vector<optim::OptimizerParamGroup> groups) {
  return std::make_unique<optim::SGD>(std::move(groups),
                                      optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-2));
}
std::unique_ptr<optim::Optimizer> make_adamw(std::vector<optim::OptimizerParamGroup> groups) {
  return std::make_unique<optim::AdamW>(std::move(groups), optim::AdamWOptions(1e-2));
}

// Parameters of assorted sizes (bytes 4 * numel): 64, 12, 40, 4, 24, 8.
std::vector<Tensor> make_parameters() {
  std::vector<Tensor> params;
  const std::vector<Shape> shapes = {{4, 4}, {3}, {2, 5}, {1}, {6}, {2}};
  for (size_t i = 0; i < shapes.size(); ++i)
    params.push_back(testing::wiggly(shapes[i], 0.3 * static_cast<double>(i)).requires_grad_());
  return params;
}

void give_gradients(const std::vector<Tensor>& params, int step) {
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor param = params[i];  // a handle: .grad is the parameter's
    param.set_grad(testing::wiggly(param.sizes(), 0.17 * step + static_cast<double>(i)));
  }
}

std::shared_ptr<distributed::ProcessGroup> one_rank() {
  return std::make_shared<distributed::SingleProcessGroup>();
}

TEST(ZeroRedundancyOptimizer, OnOneRankIsTheWrappedOptimizerBitForBit) {
  for (const auto& make : {make_sgd, make_adamw}) {
    const std::vector<Tensor> sharded_params = make_parameters(), plain_params = make_parameters();
    ZeroRedundancyOptimizer sharded(sharded_params, make,
                                    ZeroRedundancyOptimizerOptions().process_group(one_rank()));
    const auto plain = make({optim::OptimizerParamGroup(plain_params)});
    for (int step = 0; step < 3; ++step) {
      give_gradients(sharded_params, step);
      give_gradients(plain_params, step);
      sharded.step();
      plain->step();
    }
    for (size_t i = 0; i < plain_params.size(); ++i)
      EXPECT_TRUE(testing::bitwise_equal(sharded_params[i], plain_params[i])) << "parameter " << i;
    EXPECT_EQ(sharded.local_optimizer().parameters().size(), plain_params.size());
  }
}

TEST(ZeroRedundancyOptimizer, ALearningRateSetOnItsGroupsReachesTheStep) {
  const std::vector<Tensor> params = make_parameters(), plain_params = make_parameters();
  ZeroRedundancyOptimizer sharded(params, make_sgd,
                                  ZeroRedundancyOptimizerOptions().process_group(one_rank()));
  const auto plain = make_sgd({optim::OptimizerParamGroup(plain_params)});
  sharded.param_groups()[0].options().set_lr(0.01);  // as a scheduler does
  plain->param_groups()[0].options().set_lr(0.01);
  give_gradients(params, 0);
  give_gradients(plain_params, 0);
  sharded.step();
  plain->step();
  for (size_t i = 0; i < params.size(); ++i)
    EXPECT_TRUE(testing::bitwise_equal(params[i], plain_params[i])) << "parameter " << i;
}

TEST(ZeroRedundancyOptimizer, ShardsWholeParametersLargestFirst) {
  const std::vector<Tensor> params = make_parameters();
  // Bytes 64, 12, 40, 4, 24, 8 over 3 ranks, largest first to the lightest rank:
  // 64 -> 0, 40 -> 1, 24 -> 2, 12 -> 2, 8 -> 2, 4 -> 1 (ties to the lowest rank): loads 64, 44,
  // 44.
  const std::vector<int> expected = {0, 2, 1, 1, 2, 2};
  std::set<const TensorImpl*> seen;
  for (int rank = 0; rank < 3; ++rank) {
    ZeroRedundancyOptimizer sharded(
        params, make_sgd,
        ZeroRedundancyOptimizerOptions().process_group(std::make_shared<StandInGroup>(rank, 3)));
    EXPECT_EQ(sharded.owners(), expected);
    EXPECT_EQ(sharded.parameters().size(), params.size());  // its groups hold every parameter
    for (const Tensor& param : sharded.local_optimizer().parameters()) {
      EXPECT_TRUE(seen.insert(param.unsafe_impl()).second);
      size_t position = 0;
      while (params[position].unsafe_impl() != param.unsafe_impl()) ++position;
      EXPECT_EQ(expected[position], rank);
    }
  }
  EXPECT_EQ(seen.size(), params.size());  // every parameter on exactly one rank
}

TEST(ZeroRedundancyOptimizer, GroupsKeepTheirOptionsOnEveryRankEvenWhenEmpty) {
  const std::vector<Tensor> params = make_parameters();
  const std::vector<optim::OptimizerParamGroup> groups = {
      optim::OptimizerParamGroup({params[0]}),  // 64 bytes: rank 0's alone
      optim::OptimizerParamGroup({params[1], params[2], params[3], params[4], params[5]},
                                 optim::SGDOptions(0.5).momentum(0.9))};
  ZeroRedundancyOptimizer sharded(
      groups, make_sgd,
      ZeroRedundancyOptimizerOptions().process_group(std::make_shared<StandInGroup>(1, 2)));
  ASSERT_EQ(sharded.local_optimizer().param_groups().size(), 2u);
  EXPECT_TRUE(sharded.local_optimizer().param_groups()[0].params().empty());
  EXPECT_FALSE(sharded.local_optimizer().param_groups()[1].params().empty());
  EXPECT_DOUBLE_EQ(sharded.param_groups()[0].options().get_lr(), 0.1);  // the defaults
  EXPECT_DOUBLE_EQ(sharded.param_groups()[1].options().get_lr(), 0.5);
}

TEST(ZeroRedundancyOptimizer, ConsolidatedStateIsTheWrappedOptimizersAndLoadsBack) {
  const std::vector<Tensor> params = make_parameters(), plain_params = make_parameters();
  ZeroRedundancyOptimizer sharded(params, make_adamw,
                                  ZeroRedundancyOptimizerOptions().process_group(one_rank()));
  const auto plain = make_adamw({optim::OptimizerParamGroup(plain_params)});
  for (int step = 0; step < 2; ++step) {
    give_gradients(params, step);
    give_gradients(plain_params, step);
    sharded.step();
    plain->step();
  }
  EXPECT_THROW((void)sharded.state_dict(), Error);  // not consolidated
  sharded.consolidate_state_dict();
  const optim::OptimizerStateDict whole = sharded.state_dict();
  const optim::OptimizerStateDict expected = plain->state_dict();
  EXPECT_EQ(whole.scalars(), expected.scalars());
  ASSERT_EQ(whole.state.size(), expected.state.size());
  for (const auto& [position, state] : expected.state)
    for (const auto& [key, value] : state)
      EXPECT_TRUE(testing::bitwise_equal(whole.state.at(position).at(key), value))
          << "state." << position << "." << key;

  // Into a fresh one: the next step is the plain optimizer's.
  const std::vector<Tensor> resumed_params = make_parameters();
  for (size_t i = 0; i < params.size(); ++i) resumed_params[i].detach().copy_(params[i]);
  ZeroRedundancyOptimizer resumed(resumed_params, make_adamw,
                                  ZeroRedundancyOptimizerOptions().process_group(one_rank()));
  resumed.load_state_dict(whole);
  give_gradients(resumed_params, 2);
  give_gradients(plain_params, 2);
  resumed.step();
  plain->step();
  for (size_t i = 0; i < params.size(); ++i)
    EXPECT_TRUE(testing::bitwise_equal(resumed_params[i], plain_params[i])) << "parameter " << i;
}

TEST(ZeroRedundancyOptimizer, LoadKeepsThisRanksShareOfAWholeState) {
  const std::vector<Tensor> params = make_parameters();
  const auto plain = make_sgd({optim::OptimizerParamGroup(params)});
  give_gradients(params, 0);
  plain->step();
  const optim::OptimizerStateDict whole = plain->state_dict();
  size_t total = 0;
  for (int rank = 0; rank < 3; ++rank) {
    ZeroRedundancyOptimizer sharded(
        params, make_sgd,
        ZeroRedundancyOptimizerOptions().process_group(std::make_shared<StandInGroup>(rank, 3)));
    sharded.load_state_dict(whole);
    for (const Tensor& param : sharded.local_optimizer().parameters())
      EXPECT_TRUE(
          testing::bitwise_equal(sharded.local_optimizer().state(param)->at("momentum_buffer"),
                                 plain->state(param)->at("momentum_buffer")));
    total += sharded.local_state_bytes();
  }
  EXPECT_EQ(total, (64u + 12 + 40 + 4 + 24 + 8));  // each momentum buffer kept once
}

TEST(ZeroRedundancyOptimizer, ErrorsNameWhatIsWrong) {
  const std::vector<Tensor> params = make_parameters();
  const auto options = ZeroRedundancyOptimizerOptions().process_group(one_rank());
  EXPECT_ERROR_CONTAINS(([&] { ZeroRedundancyOptimizer unused(params, nullptr, options); })(),
                        "expected a function that makes the wrapped optimizer");
  EXPECT_ERROR_CONTAINS(
      ([&] {
        ZeroRedundancyOptimizer unused(
            params, [](std::vector<optim::OptimizerParamGroup>) { return nullptr; }, options);
      })(),
      "returned null");

  ZeroRedundancyOptimizer sharded(params, make_sgd, options);
  EXPECT_ERROR_CONTAINS(([&] { sharded.consolidate_state_dict(1); })(),
                        "expected a rank in [0, 1), found 1");
  optim::OptimizerStateDict two_groups;
  two_groups.param_groups.resize(2);
  EXPECT_ERROR_CONTAINS(([&] { sharded.load_state_dict(two_groups); })(),
                        "the state has 2 param groups, this optimizer has 1");
  optim::OptimizerStateDict too_few =
      make_sgd({optim::OptimizerParamGroup({params[0]})})->state_dict();
  EXPECT_ERROR_CONTAINS(([&] { sharded.load_state_dict(too_few); })(),
                        "param group 0 of the state holds 1 parameters, this "
                        "optimizer's holds 6");
  optim::OptimizerStateDict stray = make_sgd({optim::OptimizerParamGroup(params)})->state_dict();
  stray.state[17]["momentum_buffer"] = zeros({1});
  EXPECT_ERROR_CONTAINS(([&] { sharded.load_state_dict(stray); })(),
                        "an entry for parameter position 17");

  sharded.add_param_group(optim::OptimizerParamGroup({zeros({2}).requires_grad_()}));
  EXPECT_ERROR_CONTAINS(([&] { sharded.step(); })(),
                        "param groups cannot be added after construction");
}

}  // namespace
}  // namespace minidl
