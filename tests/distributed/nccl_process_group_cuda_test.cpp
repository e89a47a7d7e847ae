// NcclProcessGroup on one GPU (a world of one rank, bootstrapped over SingleProcessGroup):
// every collective and dtype runs through NCCL on the communication stream, ordered with the
// current stream by events, and DistributedDataParallel's reducer on CUDA tensors. Skips, with
// the reason, without a GPU or without NCCL. Several GPUs are exercised under mpirun by
// tools/bench_allreduce and the trainers.
#include <gtest/gtest.h>

#include <vector>

#include "minidl/core/cuda/device.h"
#include "minidl/distributed/distributed.h"
#include "minidl/ops/elementwise.h"
#include "test_util.h"

namespace minidl {
namespace {

using distributed::ReduceOp;

std::shared_ptr<distributed::NcclProcessGroup> one_gpu_group() {
  static distributed::SingleProcessGroup bootstrap;
  static auto group = distributed::NcclProcessGroup::create(bootstrap, 0);
  return group;
}

#define SKIP_WITHOUT_NCCL()         \
  do {                              \
    SKIP_WITHOUT_CUDA();            \
    try {                           \
      one_gpu_group();              \
    } catch (const Error& error) {  \
      GTEST_SKIP() << error.what(); \
    }                               \
  } while (0)

TEST(NcclProcessGroup, EveryCollectiveAndDTypeOnOneGpu) {
  SKIP_WITHOUT_NCCL();
  auto group = one_gpu_group();
  EXPECT_EQ(group->backend_name(), "nccl");
  // Every dtype a CUDA tensor can have (float64 is CPU-only: `to` refuses it, so no CUDA
  // float64 tensor reaches a collective; the first GPU run failed on that line).
  for (DType dtype : {kFloat32, kFloat16, kBFloat16, kInt32, kInt64, kUInt8}) {
    for (int64_t numel : {0, 1, 1001, 3 << 20}) {
      SCOPED_TRACE(::testing::Message() << dtype << " x " << numel);
      Tensor values = testing::wiggly({numel}, dtype, {.amplitude = 5, .offset = 6});
      Tensor device = values.cuda();
      group->all_reduce(device, ReduceOp::Sum);
      group->all_reduce(device, ReduceOp::Max);
      if (is_floating_point(dtype)) group->all_reduce(device, ReduceOp::Average);
      group->broadcast(device, 0);
      EXPECT_TRUE(testing::all_close(device.cpu(), values, 0, 0));
      Tensor gathered = zeros({numel}, TensorOptions(dtype).device(Device(kCUDA)));
      group->all_gather(gathered, device);
      EXPECT_TRUE(testing::all_close(gathered.cpu(), values, 0, 0));
      Tensor scattered = zeros({numel}, TensorOptions(dtype).device(Device(kCUDA)));
      group->reduce_scatter(scattered, device);
      EXPECT_TRUE(testing::all_close(scattered.cpu(), values, 0, 0));
    }
  }
  group->barrier();
  EXPECT_TRUE(group->failure().empty());
}

TEST(NcclProcessGroup, ReadsWhatTheCurrentStreamWroteWithoutHostSync) {
  SKIP_WITHOUT_NCCL();
  auto group = one_gpu_group();
  Tensor x = zeros({1 << 20}, TensorOptions(kFloat32).device(Device(kCUDA)));
  x.add_(3.0);  // queued on the current stream
  auto work = group->all_reduce_async(x, ReduceOp::Sum);
  work->wait();  // the current stream waits for the collective
  x.mul_(2.0);
  EXPECT_TRUE(testing::all_close(x.cpu(), full({1 << 20}, 6.0), 0, 0));
}

TEST(NcclProcessGroup, RejectsCpuTensors) {
  SKIP_WITHOUT_NCCL();
  EXPECT_ERROR_CONTAINS(one_gpu_group()->all_reduce(ones({3})),
                        "the nccl process group takes tensors on cuda:0");
}

}  // namespace
}  // namespace minidl
