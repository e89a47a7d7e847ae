// ZeroRedundancyOptimizer in one process: on a group of one it is the wrapped optimizer, bit for
// bit; on a stand-in rank of a larger group (no collectives needed) it keeps that rank's share
// of the parameters and of a loaded state; and its errors. The ranks talking to each other are
// tested under mpirun (tests/distributed/mpi/zero_mpi.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "distributed/stand_in_group.h"
#include "minidl/distributed/distributed.h"
#include "minidl/distributed/gradient_reducer.h"
#include "minidl/distributed/zero_flat_shards.h"
#include "minidl/nn/utils/clip_grad.h"
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

// --- The reduce-scatter form (Note [ZeRO's reduce-scatter form]) ---

ZeroRedundancyOptimizerOptions reduce_scatter_on(
    const std::shared_ptr<distributed::ProcessGroup>& group) {
  return ZeroRedundancyOptimizerOptions().process_group(group).sharding(
      distributed::ZeroSharding::ReduceScatter);
}

TEST(ZeroReduceScatter, OnOneRankIsTheWrappedOptimizerBitForBit) {
  for (const auto& make : {make_sgd, make_adamw}) {
    const std::vector<Tensor> sharded_params = make_parameters(), plain_params = make_parameters();
    ZeroRedundancyOptimizer sharded(sharded_params, make, reduce_scatter_on(one_rank()));
    const auto plain = make({optim::OptimizerParamGroup(plain_params)});
    for (int step = 0; step < 3; ++step) {
      give_gradients(sharded_params, step);
      give_gradients(plain_params, step);
      EXPECT_TRUE(testing::bitwise_equal(sharded.clip_grad_norm_(1.0),
                                         nn::utils::clip_grad_norm_(plain_params, 1.0)));
      sharded.step();
      plain->step();
    }
    for (size_t i = 0; i < plain_params.size(); ++i)
      EXPECT_TRUE(testing::bitwise_equal(sharded_params[i], plain_params[i])) << "parameter " << i;
  }
}

// An optimizer whose step is not elementwise (it scales by the norm of the whole gradient).
class NormalizedGradientDescent final : public optim::Optimizer {
 public:
  explicit NormalizedGradientDescent(std::vector<optim::OptimizerParamGroup> groups)
      : Optimizer(optim::SGDOptions(0.1).clone()) {
    for (const optim::OptimizerParamGroup& group : groups) add_param_group(group);
  }
  void step() override {}

 protected:
  void check_options(const optim::OptimizerOptions&, const std::string&) const override {}
  void check_state_entry(const Tensor&, const std::string&, const Tensor&,
                         const std::string&) const override {}
  const char* name() const override { return "NormalizedGradientDescent"; }
};

TEST(ZeroReduceScatter, RefusesAnOptimizerThatIsNotElementwiseAndNeedsAttach) {
  const std::vector<Tensor> params = make_parameters();
  const auto stand_in = std::make_shared<StandInGroup>(0, 2);
  EXPECT_ERROR_CONTAINS(
      ([&] {
        ZeroRedundancyOptimizer unused(
            params,
            [](std::vector<optim::OptimizerParamGroup> groups) {
              return std::make_unique<NormalizedGradientDescent>(std::move(groups));
            },
            reduce_scatter_on(stand_in));
      })(),
      "only for an elementwise optimizer");
  ZeroRedundancyOptimizer sharded(params, make_adamw, reduce_scatter_on(stand_in));
  EXPECT_EQ(sharded.sharding(), distributed::ZeroSharding::ReduceScatter);
  EXPECT_TRUE(sharded.owners().empty());
  give_gradients(params, 0);
  EXPECT_ERROR_CONTAINS(([&] { sharded.step(); })(), "expected optimizer.attach(ddp) first");
  EXPECT_ERROR_CONTAINS(([&] { (void)sharded.clip_grad_norm_(1.0); })(),
                        "expected optimizer.attach(ddp) first");
}

// DDP's buckets in the reduce-scatter form, on each stand-in rank of 3 (planning buckets and
// cutting slices needs no collective): two param groups never share a bucket; every bucket is
// padded to a multiple of 3; the ranks' slices of a whole state, and of the parameters, laid end
// to end are each bucket's elements followed by zeros.
TEST(ZeroReduceScatter, TheRanksSlicesCoverEachBucketOnce) {
  const std::vector<Tensor> params = make_parameters();  // 16, 3, 10, 1, 6, 2 elements
  const std::vector<int> group_of = {0, 1, 0, 1, 0, 1};
  std::vector<Tensor> by_position;  // group 0's parameters, then group 1's
  for (int g = 0; g < 2; ++g)
    for (size_t i = 0; i < params.size(); ++i)
      if (group_of[i] == g) by_position.push_back(params[i]);
  // A whole state by position: a moment of each parameter's shape, and a step count.
  std::map<int64_t, optim::ParamState> whole;
  for (size_t position = 0; position < by_position.size(); ++position) {
    whole[static_cast<int64_t>(position)]["exp_avg"] =
        testing::wiggly(by_position[position].sizes(), 5.0 + static_cast<double>(position));
    whole[static_cast<int64_t>(position)]["step"] = scalar_tensor(3.0, kFloat32);
  }
  const auto expected_elements = [&](const distributed::GradientReducer::ShardedBucket& bucket,
                                     bool moments) {
    std::vector<float> elements(static_cast<size_t>(bucket.buffer.numel()), 0.0f);
    for (size_t k = 0; k < bucket.parameters.size(); ++k) {
      size_t position = 0;
      while (!by_position[position].is_same(bucket.parameters[k])) ++position;
      const std::vector<float> values = to_vector<float>(
          moments ? whole.at(static_cast<int64_t>(position)).at("exp_avg") : bucket.parameters[k]);
      std::copy(values.begin(), values.end(),
                elements.begin() + static_cast<std::ptrdiff_t>(bucket.offsets[k]));
    }
    return elements;
  };

  const int world = 3;
  std::vector<std::vector<float>> moments_end_to_end, values_end_to_end;
  std::vector<std::vector<float>> expected_moments, expected_values;
  for (int rank = 0; rank < world; ++rank) {
    distributed::GradientReducer::NamedParameters named;
    for (size_t i = 0; i < params.size(); ++i) named.emplace_back(std::to_string(i), params[i]);
    // 40-byte buckets: group 0 (64, 40, 24 bytes) in 3, group 1 (12, 4, 8 bytes) in 1.
    distributed::GradientReducer reducer(named, std::make_shared<StandInGroup>(rank, world),
                                         /*bucket_bytes=*/40, /*find_unused_parameters=*/false);
    reducer.reduce_scatter_into_shards(group_of);
    const std::vector<distributed::GradientReducer::ShardedBucket> buckets =
        reducer.sharded_buckets();
    ASSERT_EQ(buckets.size(), 4u);
    distributed::ZeroFlatShards slices(reducer, by_position,
                                       std::make_shared<StandInGroup>(rank, world));
    slices.copy_parameters_into_slices();
    const auto local = slices.local_state(whole, "test");
    ASSERT_EQ(local.size(), buckets.size());
    moments_end_to_end.resize(buckets.size());
    values_end_to_end.resize(buckets.size());
    // The local order is group by group, in bucket order within a group.
    std::vector<size_t> bucket_of_local;
    for (int g = 0; g < 2; ++g)
      for (size_t b = 0; b < buckets.size(); ++b)
        if (buckets[b].key == g) bucket_of_local.push_back(b);
    for (size_t l = 0; l < bucket_of_local.size(); ++l) {
      const size_t b = bucket_of_local[l];
      EXPECT_EQ(buckets[b].buffer.numel() % world, 0) << "bucket " << b;
      for (const Tensor& param : buckets[b].parameters) {
        size_t i = 0;
        while (!params[i].is_same(param)) ++i;
        EXPECT_EQ(group_of[i], buckets[b].key) << "parameter " << i << " in bucket " << b;
      }
      EXPECT_EQ(local.at(static_cast<int64_t>(l)).at("step").item<float>(), 3.0f);
      const std::vector<float> moments =
          to_vector<float>(local.at(static_cast<int64_t>(l)).at("exp_avg"));
      const std::vector<float> values = to_vector<float>(slices.local_order()[l]);
      EXPECT_EQ(static_cast<int64_t>(moments.size()), buckets[b].buffer.numel() / world);
      moments_end_to_end[b].insert(moments_end_to_end[b].end(), moments.begin(), moments.end());
      values_end_to_end[b].insert(values_end_to_end[b].end(), values.begin(), values.end());
      if (rank == 0) {
        expected_moments.resize(buckets.size());
        expected_values.resize(buckets.size());
        expected_moments[b] = expected_elements(buckets[b], true);
        expected_values[b] = expected_elements(buckets[b], false);
      }
    }
  }
  for (size_t b = 0; b < expected_moments.size(); ++b) {
    EXPECT_EQ(moments_end_to_end[b], expected_moments[b]) << "bucket " << b;
    EXPECT_EQ(values_end_to_end[b], expected_values[b]) << "bucket " << b;
  }
}

TEST(ZeroReduceScatter, AWholeStateWhoseBucketMixesEntriesIsRefused) {
  const std::vector<Tensor> params = make_parameters();
  distributed::GradientReducer::NamedParameters named;
  for (size_t i = 0; i < params.size(); ++i) named.emplace_back(std::to_string(i), params[i]);
  distributed::GradientReducer reducer(named, std::make_shared<StandInGroup>(0, 2), 1 << 20, false);
  reducer.reduce_scatter_into_shards(std::vector<int>(params.size(), 0));
  distributed::ZeroFlatShards slices(reducer, params, std::make_shared<StandInGroup>(0, 2));
  std::map<int64_t, optim::ParamState> whole;
  whole[0]["momentum_buffer"] = zeros(params[0].sizes());  // the others have none
  EXPECT_ERROR_CONTAINS((void)slices.local_state(whole, "load"),
                        "share a bucket of the reduce-scatter form");
}

}  // namespace
}  // namespace minidl
