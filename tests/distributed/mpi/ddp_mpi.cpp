// DistributedDataParallel over MpiProcessGroup: on CPU ranks, and on CUDA tensors with the
// ranks sharing one GPU (MpiDataParallelCuda, below; every rank skips without a GPU).
#include <gtest/gtest.h>

#include <vector>

#include "distributed/flat_parameters.h"
#include "distributed/same_on_every_rank.h"
#include "minidl/core/cuda/device.h"
#include "minidl/distributed/distributed.h"
#include "minidl/models/lenet.h"
#include "minidl/nn/module.h"
#include "minidl/nn/modules/batchnorm.h"
#include "minidl/nn/modules/linear.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/loss.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "minidl/ops/shape.h"
#include "minidl/optim/sgd.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::expect_same_on_every_rank;
using testing::flat_parameters;

std::shared_ptr<distributed::ProcessGroup> group() { return distributed::default_process_group(); }

// A synthetic Fashion-MNIST-shaped batch: `count` images starting at global sample `first`.
Tensor images(int64_t first, int64_t count, int step) {
  return testing::wiggly(
      {count, 1, 28, 28}, kFloat32,
      {.phase = 0.1 * step + 0.013 * static_cast<double>(first), .step = 0.0137});
}
Tensor labels(int64_t first, int64_t count) {
  std::vector<int64_t> values;
  for (int64_t i = first; i < first + count; ++i) values.push_back((i * 7 + 3) % 10);
  return tensor(values);
}

TEST(MpiDataParallel, ParametersAreIdenticalOnEveryRankAfterTraining) {
  const int rank = group()->rank();
  manual_seed(100 + static_cast<uint64_t>(rank));  // a different initialisation on every rank
  auto model = models::LeNet();
  distributed::DistributedDataParallel ddp(model);
  expect_same_on_every_rank(flat_parameters(*model));  // rank 0's, broadcast
  optim::SGD optimizer(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  for (int step = 0; step < 3; ++step) {
    optimizer.zero_grad();
    Tensor loss = cross_entropy(ddp(images(rank * 8, 8, step)), labels(rank * 8, 8));
    loss.backward();
    optimizer.step();
  }
  expect_same_on_every_rank(flat_parameters(*model));
}

// The tolerance: the same arithmetic in another order (each rank's mean over B, then the
// average over ranks, against one mean over world * B), for 4 SGD steps in f32.
constexpr double kMatchAtol = 2e-5, kMatchRtol = 1e-4;

// Four SGD steps (momentum 0.9) on `device`: the DDP replica `model` on this rank's slice of
// each batch of world * 4 samples, and `reference` alone on the whole batch.
void train_beside_reference(distributed::DistributedDataParallel& ddp, models::LeNetImpl& model,
                            models::LeNetImpl& reference, Device device) {
  constexpr int64_t kPerRank = 4;
  const int rank = group()->rank(), world = group()->size();
  optim::SGD optimizer(model.parameters(), optim::SGDOptions(0.05).momentum(0.9));
  optim::SGD reference_optimizer(reference.parameters(), optim::SGDOptions(0.05).momentum(0.9));
  for (int step = 0; step < 4; ++step) {
    // The same samples: this rank takes its slice of the whole batch.
    const Tensor batch = images(0, world * kPerRank, step).to(device);
    const Tensor targets = labels(0, world * kPerRank).to(device);
    optimizer.zero_grad();
    cross_entropy(ddp(batch.narrow(0, rank * kPerRank, kPerRank).contiguous()),
                  targets.narrow(0, rank * kPerRank, kPerRank).contiguous())
        .backward();
    optimizer.step();
    reference_optimizer.zero_grad();
    cross_entropy(reference.forward(batch), targets).backward();
    reference_optimizer.step();
  }
}

TEST(MpiDataParallel, LeNetOnRanksMatchesOneProcessOnTheWholeBatch) {
  manual_seed(5);
  auto model = models::LeNet();
  distributed::DistributedDataParallel ddp(model);
  manual_seed(6);
  auto reference = models::LeNet();
  reference->load_state_dict(model->state_dict());

  train_beside_reference(ddp, *model, *reference, Device(kCPU));
  EXPECT_TRUE(testing::all_close(flat_parameters(*model), flat_parameters(*reference), kMatchAtol,
                                 kMatchRtol));
  EXPECT_FALSE(
      testing::all_close(flat_parameters(*model), flat_parameters(*models::LeNet()), 1e-3, 0));
}

TEST(MpiDataParallel, BucketsFollowReverseParameterOrderAndTheirSize) {
  manual_seed(1);
  auto model = models::LeNet();
  distributed::DistributedDataParallel one_bucket(model);
  ASSERT_EQ(one_bucket.bucket_parameter_names().size(), 1u);
  EXPECT_EQ(one_bucket.bucket_parameter_names()[0].front(), "fc3.bias");
  EXPECT_EQ(one_bucket.bucket_parameter_names()[0].back(), "conv1.weight");
  // fc1.weight alone is 192,000 bytes: a 0.1 MiB cap gives it a bucket of its own.
  manual_seed(1);
  auto small_model = models::LeNet();
  distributed::DistributedDataParallel small_buckets(
      small_model, distributed::DistributedDataParallelOptions().bucket_cap_mb(0.1));
  const auto names = small_buckets.bucket_parameter_names();
  ASSERT_GE(names.size(), 3u);
  EXPECT_EQ(names.front().front(), "fc3.bias");
  bool fc1_alone = false;
  for (const auto& bucket : names) fc1_alone |= bucket == std::vector<std::string>{"fc1.weight"};
  EXPECT_TRUE(fc1_alone);

  const int rank = group()->rank();
  for (auto* ddp : {&one_bucket, &small_buckets}) {
    ddp->module()->zero_grad();
    cross_entropy((*ddp)(images(rank * 2, 2, 0)), labels(rank * 2, 2)).backward();
  }
  auto a = model->named_parameters(), b = small_model->named_parameters();
  for (const auto& item : a)
    EXPECT_TRUE(testing::all_close(item.value().grad(), b[item.key()].grad(), 1e-7, 1e-6))
        << item.key();
}

TEST(MpiDataParallel, NoSyncAccumulatesAndTheNextPassAveragesTheSum) {
  const int rank = group()->rank(), world = group()->size();
  manual_seed(2);
  auto model = models::LeNet();
  distributed::DistributedDataParallel ddp(model);
  manual_seed(3);
  auto local = models::LeNet();
  local->load_state_dict(model->state_dict());

  {
    auto guard = ddp.no_sync();
    cross_entropy(ddp(images(rank, 1, 0)), labels(rank, 1)).backward();
    expect_same_on_every_rank(tensor(std::vector<int32_t>{1}));  // only a marker collective
  }
  cross_entropy(ddp(images(rank, 1, 1)), labels(rank, 1)).backward();

  cross_entropy(local->forward(images(rank, 1, 0)), labels(rank, 1)).backward();
  cross_entropy(local->forward(images(rank, 1, 1)), labels(rank, 1)).backward();
  Tensor expected = local->fc1->weight.grad().clone();
  group()->all_reduce(expected, distributed::ReduceOp::Sum);
  expected = expected / static_cast<double>(world);
  EXPECT_TRUE(testing::all_close(model->fc1->weight.grad(), expected, 1e-7, 1e-5));
  expect_same_on_every_rank(model->fc1->weight.grad());
}

struct TwoHeadsImpl : nn::Module {
  explicit TwoHeadsImpl(int64_t outputs = 2) {
    used = register_module("used", nn::Linear(4, outputs));
    unused = register_module("unused", nn::Linear(4, 2));
  }
  Tensor forward(const Tensor& x) { return used(x); }
  nn::Linear used{nullptr}, unused{nullptr};
};
MINIDL_MODULE(TwoHeads);

TEST(MpiDataParallel, AParameterWithoutGradientIsAnErrorNamingIt) {
  auto model = TwoHeads();
  distributed::DistributedDataParallel ddp(model);
  EXPECT_ERROR_CONTAINS(ddp(ones({3, 4})).sum().backward(),
                        "2 parameters got no gradient in this backward pass: unused.weight, "
                        "unused.bias");
  // The reducer is ready for the next pass, and the group still works.
  group()->barrier();
}

TEST(MpiDataParallel, FindUnusedParametersAveragesZerosForThem) {
  const int rank = group()->rank(), world = group()->size();
  auto model = TwoHeads();
  distributed::DistributedDataParallel ddp(
      model, distributed::DistributedDataParallelOptions().find_unused_parameters(true));
  (ddp(full({1, 4}, rank + 1.0)).sum()).backward();
  EXPECT_TRUE(testing::all_close(model->unused->weight.grad(), zeros({2, 4}), 0, 0));
  // d(sum(W x + b))/dW = x for each output row; averaged over ranks: mean of rank + 1.
  EXPECT_TRUE(
      testing::all_close(model->used->weight.grad(), full({2, 4}, (world + 1) / 2.0), 1e-6, 1e-6));
}

TEST(MpiDataParallel, DifferentModelsAreAnErrorOnEveryRank) {
  const int rank = group()->rank();
  auto model = TwoHeads(rank == 0 ? 2 : 3);
  EXPECT_ERROR_CONTAINS(
      distributed::DistributedDataParallel(model),
      "the model differs between ranks: rank 1 has \"parameter used.weight float32 "
      "[3, 4]\" where rank 0 has \"parameter used.weight float32 [2, 4]\"");
  group()->barrier();
}

TEST(MpiDataParallel, SyncBuffersCopiesRankZerosRunningStatistics) {
  const int rank = group()->rank();
  auto norm = nn::BatchNorm2d(3);
  distributed::DistributedDataParallel ddp(norm);
  ddp(testing::wiggly({2, 3, 4, 4}, 0.5 * rank));  // a different batch on every rank
  Tensor mean = norm->named_buffers()["running_mean"];
  EXPECT_FALSE(testing::all_close(mean, zeros({3}), 1e-6, 0));
  ddp.sync_buffers();
  expect_same_on_every_rank(norm->named_buffers()["running_mean"]);
  expect_same_on_every_rank(norm->named_buffers()["running_var"]);
  expect_same_on_every_rank(norm->named_buffers()["num_batches_tracked"]);
}

// DDP on CUDA tensors over MPI. init() puts rank r on GPU r % device_count, so on a machine with
// one GPU every rank shares it, which NCCL refuses (one rank per GPU); the MPI group stages each
// bucket through pinned host memory instead. The GPU kit runs this with 2 ranks on its one GPU
// (tools/gpu/stages.py, "mpi: DDP on CUDA tensors, 2 ranks sharing the GPU").
TEST(MpiDataParallelCuda, LeNetOnRanksSharingAGpuMatchesOneProcessOnTheWholeBatch) {
  SKIP_WITHOUT_CUDA();
  testing::DeterministicConvolutions deterministic;
  const Device gpu(kCUDA, cuda::current_device());
  manual_seed(5);
  auto model = models::LeNet();
  model->to(gpu);
  distributed::DistributedDataParallel ddp(
      model, distributed::DistributedDataParallelOptions().process_group(group()));
  EXPECT_EQ(ddp.process_group()->backend_name(), "mpi");
  manual_seed(6);
  auto reference = models::LeNet();
  reference->to(gpu);
  reference->load_state_dict(model->state_dict());
  const Tensor initial = flat_parameters(*model);

  train_beside_reference(ddp, *model, *reference, gpu);
  for (const Tensor& parameter : model->parameters()) {
    EXPECT_TRUE(parameter.is_cuda());
    EXPECT_TRUE(parameter.grad().is_cuda());  // the averages were copied back to the GPU
  }
  // Every rank applied the same averaged gradients, bit for bit; and they are the whole batch's
  // within the tolerance of the CPU test above (the same sums in another order).
  expect_same_on_every_rank(flat_parameters(*model));
  EXPECT_TRUE(testing::all_close(flat_parameters(*model), flat_parameters(*reference), kMatchAtol,
                                 kMatchRtol));
  EXPECT_FALSE(testing::all_close(flat_parameters(*model), initial, 1e-3, 0));
}

}  // namespace
}  // namespace minidl
