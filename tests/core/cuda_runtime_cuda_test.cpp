// The CUDA runtime layer on a real GPU: device queries, the caching allocator through tensors,
// streams, events, copies and the pinned pool. Each test skips, saying why, without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "minidl/core/cuda/caching_allocator.h"
#include "minidl/core/cuda/device.h"
#include "minidl/core/cuda/pinned_allocator.h"
#include "minidl/core/cuda/stream.h"
#include "test_util.h"

namespace minidl::cuda {
namespace {

const Device kGpu(kCUDA, 0);

TEST(CudaRuntime, DeviceQueriesAndGuard) {
  SKIP_WITHOUT_CUDA();
  EXPECT_TRUE(is_built());
  EXPECT_GE(device_count(), 1);
  set_device(0);
  EXPECT_EQ(current_device(), 0);
  {
    DeviceGuard guard(device_count() - 1);
    EXPECT_EQ(current_device(), device_count() - 1);
  }
  EXPECT_EQ(current_device(), 0);
  EXPECT_ERROR_CONTAINS(set_device(device_count()), "set_device: expected a device index in [0, ");
  synchronize();
}

TEST(CudaRuntime, FreedTensorMemoryIsReusedWithoutCudaMalloc) {
  SKIP_WITHOUT_CUDA();
  void* first = nullptr;
  const MemoryStats before = memory_stats(0);
  {
    Tensor t = empty({1000}, kGpu);  // 4000 bytes, rounded to 4096
    first = t.data_ptr();
    EXPECT_EQ(memory_stats(0).allocated_bytes, before.allocated_bytes + 4096);
  }
  EXPECT_EQ(memory_stats(0).allocated_bytes, before.allocated_bytes);
  const uint64_t mallocs = memory_stats(0).num_device_allocations;
  Tensor again = empty({1000}, kGpu);
  EXPECT_EQ(again.data_ptr(), first);
  EXPECT_EQ(memory_stats(0).num_device_allocations, mallocs);
}

TEST(CudaRuntime, PeakAndEmptyCache) {
  SKIP_WITHOUT_CUDA();
  reset_peak_memory_stats(0);
  const size_t base = memory_stats(0).allocated_bytes;
  { Tensor big = empty({64 << 20}, TensorOptions(kUInt8).device(kGpu)); }  // 64 MiB, own segment
  MemoryStats stats = memory_stats(0);
  EXPECT_GE(stats.peak_allocated_bytes, base + (size_t{64} << 20));
  EXPECT_GE(stats.reserved_bytes, size_t{64} << 20);
  empty_cache();
  stats = memory_stats(0);
  EXPECT_LT(stats.reserved_bytes, size_t{64} << 20);
  EXPECT_GE(stats.num_device_frees, 1u);
}

TEST(CudaRuntime, OutOfMemoryIsAnErrorThatNamesTheSizes) {
  SKIP_WITHOUT_CUDA();
  const int64_t petabyte = int64_t{1} << 50;
  EXPECT_ERROR_CONTAINS(empty({petabyte}, TensorOptions(kUInt8).device(kGpu)),
                        "CUDA out of memory on device 0: tried to allocate 1048576.00 GiB");
  Tensor still_works = ones({4}, kGpu);
  EXPECT_EQ(to_vector<float>(still_works), std::vector<float>(4, 1.0f));
}

TEST(CudaRuntime, StreamGuardSetsAndRestoresTheCurrentStream) {
  SKIP_WITHOUT_CUDA();
  const Stream side = Stream::create(0);
  EXPECT_NE(side.handle(), nullptr);
  EXPECT_EQ(current_stream(0), Stream::default_stream(0));
  {
    StreamGuard guard(side);
    EXPECT_EQ(current_stream(0), side);
    EXPECT_EQ(current_stream_handle(0), side.handle());
  }
  EXPECT_EQ(current_stream(0), Stream::default_stream(0));
}

TEST(CudaRuntime, BlocksAreNotSharedBetweenStreams) {
  SKIP_WITHOUT_CUDA();
  const Stream side = Stream::create(0);
  void* on_default = nullptr;
  {
    Tensor t = empty({256}, kGpu);
    on_default = t.data_ptr();
  }
  StreamGuard guard(side);
  Tensor on_side = empty({256}, kGpu);
  EXPECT_NE(on_side.data_ptr(), on_default);
}

TEST(CudaRuntime, EventsOrderStreams) {
  SKIP_WITHOUT_CUDA();
  const Stream producer = Stream::create(0), consumer = Stream::create(0);
  Tensor x = empty({1 << 20}, kGpu);
  Event filled;
  {
    StreamGuard guard(producer);
    x.fill_(3.0);
    filled.record(producer);
  }
  filled.wait(consumer);
  Tensor y = empty({1 << 20}, kGpu);
  {
    StreamGuard guard(consumer);
    y.copy_(x);
    record_stream(*x.storage(), consumer);  // x is read on a stream it was not allocated on
  }
  Event done;
  done.record(consumer);
  done.synchronize();
  EXPECT_TRUE(done.query());
  EXPECT_EQ(to_vector<float>(y.narrow(0, 0, 4)), std::vector<float>(4, 3.0f));
  Event never_recorded;
  EXPECT_TRUE(never_recorded.query());
}

TEST(CudaRuntime, CopiesConvertDtypesAndFollowStrides) {
  SKIP_WITHOUT_CUDA();
  Tensor host = arange(6, kFloat32).view({2, 3});
  Tensor device = host.to(kGpu);
  // Strided device-to-device copy (a transpose) and conversions on the device.
  EXPECT_EQ(to_vector<float>(device.t().contiguous()), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  for (DType dtype : {kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool}) {
    SCOPED_TRACE(dtype_name(dtype));
    EXPECT_EQ(to_vector<double>(device.to(dtype)), to_vector<double>(host.to(dtype)));
  }
  Tensor filled = empty({3, 4}, TensorOptions(kBFloat16).device(kGpu));
  filled.t().fill_(1.5);
  EXPECT_EQ(to_vector<float>(filled), std::vector<float>(12, 1.5f));
  // Broadcast source.
  Tensor row = tensor({1.0, 2.0}, TensorOptions().device(kGpu));
  Tensor grid = zeros({3, 2}, kGpu);
  grid.copy_(row);
  EXPECT_EQ(to_vector<float>(grid), (std::vector<float>{1, 2, 1, 2, 1, 2}));
}

TEST(CudaRuntime, PinnedBatchesAreCopiedToTheDevice) {
  SKIP_WITHOUT_CUDA();
  EXPECT_TRUE(pinned_memory_is_page_locked());
  Tensor batch = empty_pinned({4, 3}, kUInt8);
  batch.fill_(9);
  Tensor on_device = batch.to(kGpu);
  EXPECT_EQ(to_vector<int64_t>(on_device), std::vector<int64_t>(12, 9));
}

TEST(CudaRuntime, PeerCopiesBetweenDevices) {
  SKIP_WITHOUT_CUDA();
  if (device_count() < 2) GTEST_SKIP() << "needs two CUDA devices, found " << device_count();
  Tensor a = arange(10, kFloat32).to(kGpu);
  Tensor b = a.to(Device(kCUDA, 1));
  EXPECT_EQ(b.device(), Device(kCUDA, 1));
  EXPECT_EQ(to_vector<float>(b), to_vector<float>(a));
}

}  // namespace
}  // namespace minidl::cuda
