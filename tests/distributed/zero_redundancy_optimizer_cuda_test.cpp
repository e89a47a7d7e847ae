// ZeroRedundancyOptimizer on a GPU. On a group of one it is the wrapped optimizer bit for bit,
// with the GradScaler's device flag too, in both forms. Its memory, from the caching allocator's
// statistics: a rank that loads its shard of a whole AdamW state allocates at most 1/N of it plus
// one parameter's state (Note [ZeRO shards whole parameters]), or, in the reduce-scatter form,
// 1/N plus the padding of each bucket (Note [ZeRO's reduce-scatter form]), and the ranks' shards
// add up to the whole. Each rank's side is taken in one process through a stand-in group
// (planning buckets, cutting slices and loading a shard need no collective). The collectives of
// the reduce-scatter form on NCCL need two GPUs, which the GPU kit does not have: they are the
// ProcessGroup's reduce_scatter and all_gather, tested on one GPU in
// nccl_process_group_cuda_test.cpp. Skips, with the reason, without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "distributed/stand_in_group.h"
#include "minidl/core/cuda/caching_allocator.h"
#include "minidl/core/cuda/device.h"
#include "minidl/distributed/distributed.h"
#include "minidl/distributed/gradient_reducer.h"
#include "minidl/distributed/zero_flat_shards.h"
#include "minidl/ops/elementwise.h"
#include "minidl/optim/optim.h"
#include "test_util.h"

namespace minidl {
namespace {

std::unique_ptr<optim::Optimizer> make_adamw(std::vector<optim::OptimizerParamGroup> groups) {
  return std::make_unique<optim::AdamW>(std::move(groups), optim::AdamWOptions(1e-3));
}

TEST(ZeroRedundancyOptimizerCuda, OnOneGpuIsTheWrappedOptimizerWithTheScaler) {
  SKIP_WITHOUT_CUDA();
  const Device gpu(kCUDA, 0);
  for (const distributed::ZeroSharding sharding :
       {distributed::ZeroSharding::WholeParameters, distributed::ZeroSharding::ReduceScatter}) {
    std::vector<Tensor> sharded_params, plain_params;
    for (const Shape& shape : std::vector<Shape>{{64, 32}, {32}, {10, 64}}) {
      sharded_params.push_back(testing::wiggly(shape, 0.2).to(gpu).requires_grad_());
      plain_params.push_back(testing::wiggly(shape, 0.2).to(gpu).requires_grad_());
    }
    distributed::ZeroRedundancyOptimizer sharded(
        sharded_params, make_adamw,
        distributed::ZeroRedundancyOptimizerOptions()
            .process_group(std::make_shared<distributed::SingleProcessGroup>())
            .sharding(sharding));
    const auto plain = make_adamw({optim::OptimizerParamGroup(plain_params)});
    amp::GradScaler sharded_scaler, plain_scaler;
    for (int step = 0; step < 3; ++step) {
      // Step 1 overflows: both scalers skip it and back off alike.
      const double overflow = step == 1 ? 1e38 : 1.0;
      // scale() starts each step, as scaler.scale(loss).backward() would (it puts the scale on
      // the loss's device; unscale_ refuses to run before it); the gradients are set by hand.
      const Tensor loss = ones({}, TensorOptions().device(gpu));
      (void)sharded_scaler.scale(loss);
      (void)plain_scaler.scale(loss);
      for (size_t i = 0; i < sharded_params.size(); ++i) {
        const Tensor loss_like = testing::wiggly(sharded_params[i].sizes(), 0.3 * step).to(gpu);
        Tensor a = sharded_params[i], b = plain_params[i];
        a.set_grad(loss_like * (sharded_scaler.get_scale() * overflow));
        b.set_grad(loss_like * (plain_scaler.get_scale() * overflow));
      }
      sharded_scaler.step(sharded);
      plain_scaler.step(*plain);
      sharded_scaler.update();
      plain_scaler.update();
    }
    for (size_t i = 0; i < plain_params.size(); ++i)
      EXPECT_TRUE(testing::bitwise_equal(sharded_params[i].cpu(), plain_params[i].cpu()))
          << "parameter " << i << ", " << distributed::zero_sharding_name(sharding);
    EXPECT_EQ(sharded_scaler.get_scale(), plain_scaler.get_scale());
  }
}

TEST(ZeroRedundancyOptimizerCuda, EachRankAllocatesItsShareOfTheState) {
  SKIP_WITHOUT_CUDA();
  const Device gpu(kCUDA, 0);
  // About 9 MB of float32 parameters in sizes as a small CNN's.
  std::vector<Tensor> params;
  for (const Shape& shape : std::vector<Shape>{{256, 256, 3, 3},
                                               {128, 128, 3, 3},
                                               {512, 256},
                                               {256},
                                               {128},
                                               {64, 64, 3, 3},
                                               {1000, 256},
                                               {10}})
    params.push_back(testing::wiggly(shape, 0.1).to(gpu).requires_grad_());
  const auto plain = make_adamw({optim::OptimizerParamGroup(params)});
  for (Tensor param : params) param.set_grad(testing::wiggly(param.sizes(), 0.7).to(gpu));
  plain->step();
  const optim::OptimizerStateDict whole = plain->state_dict();
  size_t whole_bytes = 0, largest = 0;
  for (const Tensor& param : params) {
    size_t bytes = 0;
    for (const auto& entry : *plain->state(param)) bytes += entry.second.nbytes();
    whole_bytes += bytes;
    largest = std::max(largest, bytes);
  }

  constexpr int kWorld = 4;
  size_t total = 0;
  for (int rank = 0; rank < kWorld; ++rank) {
    cuda::synchronize();
    const size_t before = cuda::memory_stats(0).allocated_bytes;
    distributed::ZeroRedundancyOptimizer sharded(
        params, make_adamw,
        distributed::ZeroRedundancyOptimizerOptions().process_group(
            std::make_shared<testing::StandInGroup>(rank, kWorld)));
    sharded.load_state_dict(whole);
    cuda::synchronize();
    const size_t allocated = cuda::memory_stats(0).allocated_bytes - before;
    // The allocator rounds each block up to 512 bytes: 3 state tensors per parameter at most.
    const size_t rounding = 3 * params.size() * cuda::kMinBlockSize;
    EXPECT_GE(allocated, sharded.local_state_bytes()) << "rank " << rank;
    EXPECT_LE(allocated, whole_bytes / kWorld + largest + rounding)
        << "rank " << rank << ": whole " << whole_bytes << ", largest " << largest;
    total += sharded.local_state_bytes();
  }
  EXPECT_EQ(total, whole_bytes);
}

TEST(ZeroRedundancyOptimizerCuda, EachRankAllocatesItsSlicesOfTheState) {
  SKIP_WITHOUT_CUDA();
  const Device gpu(kCUDA, 0);
  std::vector<Tensor> params;
  distributed::GradientReducer::NamedParameters named;
  for (const Shape& shape : std::vector<Shape>{
           {256, 256, 3, 3}, {128, 128, 3, 3}, {512, 256}, {256}, {1000, 256}, {10}}) {
    params.push_back(testing::wiggly(shape, 0.1).to(gpu).requires_grad_());
    named.emplace_back("p" + std::to_string(params.size()), params.back());
  }
  const auto plain = make_adamw({optim::OptimizerParamGroup(params)});
  for (Tensor param : params) param.set_grad(testing::wiggly(param.sizes(), 0.7).to(gpu));
  plain->step();
  const optim::OptimizerStateDict whole = plain->state_dict();
  size_t moments = 0;  // the whole state but the step counts
  for (const Tensor& param : params) moments += 2 * param.nbytes();

  constexpr int kWorld = 4;
  size_t total = 0, buckets = 0;
  for (int rank = 0; rank < kWorld; ++rank) {
    const auto stand_in = std::make_shared<testing::StandInGroup>(rank, kWorld);
    // 1 MiB buckets: 4 of them, some parameters cut between ranks.
    distributed::GradientReducer reducer(named, stand_in, 1 << 20, false);
    reducer.reduce_scatter_into_shards(std::vector<int>(params.size(), 0));
    distributed::ZeroFlatShards slices(reducer, params, stand_in);
    buckets = reducer.sharded_buckets().size();
    EXPECT_EQ(buckets, 4u);
    cuda::synchronize();
    const size_t before = cuda::memory_stats(0).allocated_bytes;
    auto local = make_adamw({optim::OptimizerParamGroup(slices.local_order())});
    optim::OptimizerStateDict local_state;
    local_state.state = slices.local_state(whole.state, "test");
    local_state.param_groups.push_back({.options = whole.param_groups[0].options});
    for (size_t i = 0; i < slices.local_order().size(); ++i)
      local_state.param_groups[0].params.push_back(static_cast<int64_t>(i));
    local->load_state_dict(local_state);
    local_state = {};
    cuda::synchronize();
    const size_t allocated = cuda::memory_stats(0).allocated_bytes - before;
    size_t kept = 0;
    for (const Tensor& slice : local->parameters())
      for (const auto& entry : *local->state(slice)) kept += entry.second.nbytes();
    // Per bucket: 3 state tensors (2 moments, a step count), each rounded up to 512 bytes by the
    // allocator, and fewer than N padding elements in each moment.
    const size_t slack = buckets * (3 * cuda::kMinBlockSize + 2 * (kWorld - 1) * sizeof(float));
    EXPECT_GE(allocated, kept) << "rank " << rank;
    EXPECT_LE(allocated, moments / kWorld + slack) << "rank " << rank << ": moments " << moments;
    total += kept - buckets * sizeof(float);  // the moments alone
  }
  EXPECT_GE(total, moments);
  EXPECT_LE(total, moments + buckets * 2 * (kWorld - 1) * sizeof(float));
}

}  // namespace
}  // namespace minidl
