// distributed/ in a process started without mpirun: world size 1, no MPI at run time.
// Collectives are the identity, DistributedDataParallel leaves backward alone, and the
// autograd callback queue that DDP relies on runs at the end of backward.
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "minidl/core/autograd/engine.h"
#include "minidl/distributed/distributed.h"
#include "minidl/models/lenet.h"
#include "minidl/nn/modules/linear.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

using distributed::ReduceOp;

const std::vector<DType> kCollectiveDTypes = {kFloat32, kFloat64, kFloat16, kBFloat16,
                                              kInt32,   kInt64,   kUInt8};

TEST(DistributedSingleProcess, InitWithoutMpirunIsWorldSizeOne) {
  ASSERT_EQ(std::getenv("OMPI_COMM_WORLD_SIZE"), nullptr) << "run this test without mpirun";
  distributed::init();
  distributed::init();  // a second call does nothing
  EXPECT_TRUE(distributed::is_initialized());
  EXPECT_EQ(distributed::rank(), 0);
  EXPECT_EQ(distributed::world_size(), 1);
  EXPECT_EQ(distributed::local_rank(), 0);
  auto group = distributed::default_process_group();
  EXPECT_EQ(group->backend_name(), "single");
  EXPECT_EQ(group->size(), 1);
  EXPECT_EQ(group.get(), distributed::default_process_group().get());
}

TEST(DistributedSingleProcess, CollectivesAreTheIdentity) {
  distributed::init();
  auto group = distributed::default_process_group();
  for (DType dtype : kCollectiveDTypes) {
    for (int64_t numel : {0, 1, 1001}) {
      SCOPED_TRACE(::testing::Message() << dtype << " x " << numel);
      Tensor values = testing::wiggly({numel}, dtype, {.amplitude = 5, .offset = 6});
      Tensor reduced = values.clone();
      group->all_reduce(reduced, ReduceOp::Sum);
      group->all_reduce(reduced, ReduceOp::Max);
      if (is_floating_point(dtype)) group->all_reduce(reduced, ReduceOp::Average);
      group->broadcast(reduced, 0);
      EXPECT_TRUE(testing::all_close(reduced, values, 0, 0));
      Tensor gathered = zeros({numel}, dtype);
      group->all_gather(gathered, values);
      EXPECT_TRUE(testing::all_close(gathered, values, 0, 0));
      Tensor scattered = zeros({numel}, dtype);
      group->reduce_scatter(scattered, values);
      EXPECT_TRUE(testing::all_close(scattered, values, 0, 0));
    }
  }
  group->barrier();
  EXPECT_TRUE(group->all_reduce_async(ones({3}))->is_completed());
}

TEST(DistributedSingleProcess, CollectivesCheckTheirArguments) {
  distributed::init();
  auto group = distributed::default_process_group();
  EXPECT_ERROR_CONTAINS(group->all_reduce(ones({2, 3}).t()), "all_reduce: expected a contiguous");
  EXPECT_ERROR_CONTAINS(group->all_reduce(ones({3}, kInt32), ReduceOp::Average),
                        "average needs a floating-point tensor, got int32");
  EXPECT_ERROR_CONTAINS(group->broadcast(ones({3}), 1), "expected a root rank in [0, 1), got 1");
  EXPECT_ERROR_CONTAINS(group->all_gather(zeros({4}), ones({3})),
                        "expected output to have world size (1) x 3 = 3 elements, got 4");
  EXPECT_ERROR_CONTAINS(group->all_reduce(ones({3}, kBool)), "supports f32, f64, f16, bf16");
}

TEST(DistributedSingleProcess, CollectiveTimeoutComesFromTheEnvironment) {
  ::setenv("MINIDL_COLLECTIVE_TIMEOUT_S", "2.5", 1);
  EXPECT_EQ(distributed::default_collective_timeout().count(), 2500);
  EXPECT_EQ(distributed::ProcessGroupOptions().timeout().count(), 2500);
  ::setenv("MINIDL_COLLECTIVE_TIMEOUT_S", "soon", 1);
  EXPECT_ERROR_CONTAINS(distributed::default_collective_timeout(),
                        "MINIDL_COLLECTIVE_TIMEOUT_S: expected a positive number of seconds, "
                        "got \"soon\"");
  ::unsetenv("MINIDL_COLLECTIVE_TIMEOUT_S");
  EXPECT_EQ(distributed::default_collective_timeout().count(), 300000);
}

TEST(DistributedSingleProcess, DataParallelIsPlainTrainingForOneRank) {
  distributed::init();
  manual_seed(7);
  auto model = models::LeNet();
  Tensor before = model->fc3->weight.clone();
  distributed::DistributedDataParallel ddp(model);
  EXPECT_TRUE(ddp.bucket_parameter_names().empty());
  EXPECT_TRUE(testing::all_close(model->fc3->weight, before, 0, 0));
  Tensor x = testing::wiggly({2, 1, 28, 28});
  ddp(x).sum().backward();
  Tensor expected = model->fc3->weight.grad().clone();
  model->zero_grad();
  model->forward(x).sum().backward();
  EXPECT_TRUE(testing::all_close(model->fc3->weight.grad(), expected, 0, 0));
  { auto guard = ddp.no_sync(); }
  ddp.sync_buffers();
}

TEST(AutogradQueueCallback, RunsOnceAfterEveryNodeInQueueOrder) {
  Tensor w = ones({3}).requires_grad_();
  std::vector<std::string> events;
  w.register_post_accumulate_grad_hook([&](const Tensor&) {
    events.push_back("hook");
    autograd::queue_callback([&] {
      events.push_back("first");
      autograd::queue_callback([&] { events.push_back("queued by a callback"); });
    });
    autograd::queue_callback([&] { events.push_back("second"); });
  });
  (w * 2.0).sum().backward();
  EXPECT_EQ(events, (std::vector<std::string>{"hook", "first", "second", "queued by a callback"}));
  EXPECT_ERROR_CONTAINS(autograd::queue_callback([] {}), "no backward pass is running");
}

TEST(AutogradQueueCallback, AnExceptionLeavesBackward) {
  Tensor w = ones({2}).requires_grad_();
  w.register_post_accumulate_grad_hook([](const Tensor&) {
    autograd::queue_callback([] { MINIDL_CHECK(false, "callback failed"); });
  });
  EXPECT_ERROR_CONTAINS((w * 3.0).sum().backward(), "callback failed");
  EXPECT_ERROR_CONTAINS(autograd::queue_callback([] {}), "no backward pass is running");
}

}  // namespace
}  // namespace minidl
