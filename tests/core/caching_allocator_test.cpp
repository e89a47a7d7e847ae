// The caching allocator's policy, on a fake device: no GPU needed.
#include "minidl/core/cuda/caching_allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <thread>

#include "fake_device_memory.h"
#include "test_util.h"

namespace minidl::cuda {
namespace {

using namespace fake_device;

TEST(CachingAllocator, FreedBlockIsReusedWithoutANewDeviceAllocation) {
  Fixture f;
  void* first = f.allocator->allocate(4000, kStreamA);
  f.allocator->free(first);
  void* second = f.allocator->allocate(4000, kStreamA);
  EXPECT_EQ(second, first);
  EXPECT_EQ(f.allocator->stats().num_device_allocations, 1u);
  EXPECT_EQ(f.fake->allocate_calls, 1);
  f.allocator->free(second);
}

TEST(CachingAllocator, SizesAreRoundedToTheMinimumBlockSize) {
  Fixture f;
  void* one = f.allocator->allocate(1, kStreamA);
  EXPECT_EQ(f.allocator->stats().allocated_bytes, kMinBlockSize);
  void* zero = f.allocator->allocate(0, kStreamA);  // still a distinct, minimal block
  EXPECT_NE(zero, one);
  EXPECT_EQ(f.allocator->stats().allocated_bytes, 2 * kMinBlockSize);
  void* odd = f.allocator->allocate(kMinBlockSize + 1, kStreamA);
  EXPECT_EQ(f.allocator->stats().allocated_bytes, 4 * kMinBlockSize);
  // All three came from one small segment of kSmallBuffer bytes.
  EXPECT_EQ(f.allocator->stats().reserved_bytes, kSmallBuffer);
  EXPECT_EQ(f.allocator->stats().num_device_allocations, 1u);
  for (void* p : {one, zero, odd}) f.allocator->free(p);
}

TEST(CachingAllocator, SegmentSizesFollowThePools) {
  Fixture f;
  // Each on its own stream, so none is carved out of another's cached rest.
  void* small = f.allocator->allocate(kSmallSize, fake_stream(1));
  EXPECT_EQ(f.allocator->stats().reserved_bytes, kSmallBuffer);
  void* medium = f.allocator->allocate(kSmallSize + 1, fake_stream(2));
  EXPECT_EQ(f.allocator->stats().reserved_bytes, kSmallBuffer + kLargeBuffer);
  void* large = f.allocator->allocate(kMinLargeAlloc + 1, fake_stream(3));  // own, 2 MiB steps
  EXPECT_EQ(f.allocator->stats().reserved_bytes, kSmallBuffer + kLargeBuffer + 12 * kMiB);
  for (void* p : {small, medium, large}) f.allocator->free(p);
}

TEST(CachingAllocator, ALargeRequestIsServedFromTheCachedRestOfASegment) {
  Fixture f;
  void* medium = f.allocator->allocate(kSmallSize + 1, kStreamA);  // front of a 20 MiB segment
  void* large = f.allocator->allocate(kMinLargeAlloc + 1, kStreamA);
  EXPECT_EQ(f.allocator->stats().num_device_allocations, 1u);
  EXPECT_EQ(static_cast<char*>(large), static_cast<char*>(medium) + kSmallSize + kMinBlockSize);
  for (void* p : {medium, large}) f.allocator->free(p);
}

TEST(CachingAllocator, LargeBlocksAreSplitAndMergeBackWhenFreed) {
  Fixture f;
  // A 4 MiB request takes the front of a 20 MiB segment; the 16 MiB rest stays cached.
  void* a = f.allocator->allocate(4 * kMiB, kStreamA);
  void* b = f.allocator->allocate(4 * kMiB, kStreamA);
  EXPECT_EQ(static_cast<char*>(b), static_cast<char*>(a) + 4 * kMiB);
  void* c = f.allocator->allocate(4 * kMiB, kStreamA);
  EXPECT_EQ(static_cast<char*>(c), static_cast<char*>(b) + 4 * kMiB);
  EXPECT_EQ(f.allocator->stats().num_device_allocations, 1u);
  // Free the middle, then its neighbours: the pieces merge into the whole segment again...
  f.allocator->free(b);
  f.allocator->free(a);
  f.allocator->free(c);
  // ...which empty_cache can return (only whole segments go back), and which serves a 20 MiB
  // request before that without another device allocation.
  void* whole = f.allocator->allocate(kLargeBuffer, kStreamA);
  EXPECT_EQ(whole, a);
  EXPECT_EQ(f.allocator->stats().num_device_allocations, 1u);
  f.allocator->free(whole);
  f.allocator->empty_cache();
  EXPECT_EQ(f.allocator->stats().num_device_frees, 1u);
  EXPECT_EQ(f.fake->used(), 0u);
}

TEST(CachingAllocator, BestFitPicksTheSmallestCachedBlockThatFits) {
  Fixture f;
  void* big = f.allocator->allocate(12 * kMiB, kStreamA);   // own 12 MiB segment
  void* fits = f.allocator->allocate(11 * kMiB, kStreamA);  // own 12 MiB segment
  void* huge = f.allocator->allocate(30 * kMiB, kStreamA);  // own 30 MiB segment
  f.allocator->free(huge);
  f.allocator->free(big);
  f.allocator->free(fits);
  void* again_big = f.allocator->allocate(12 * kMiB, kStreamA);  // equal sizes: lowest address
  void* again_fits = f.allocator->allocate(11 * kMiB, kStreamA);
  EXPECT_EQ(again_big, big);
  EXPECT_EQ(again_fits, fits);
  EXPECT_EQ(f.allocator->stats().num_device_allocations, 3u);
  for (void* p : {again_big, again_fits}) f.allocator->free(p);
}

TEST(CachingAllocator, CountersAndPeaks) {
  Fixture f;
  void* a = f.allocator->allocate(3 * kMiB, kStreamA);
  void* b = f.allocator->allocate(5 * kMiB, kStreamA);
  MemoryStats stats = f.allocator->stats();
  EXPECT_EQ(stats.allocated_bytes, 8 * kMiB);
  EXPECT_EQ(stats.reserved_bytes, kLargeBuffer);
  EXPECT_EQ(stats.peak_allocated_bytes, 8 * kMiB);
  f.allocator->free(b);
  stats = f.allocator->stats();
  EXPECT_EQ(stats.allocated_bytes, 3 * kMiB);
  EXPECT_EQ(stats.peak_allocated_bytes, 8 * kMiB);  // the peak remembers
  EXPECT_EQ(stats.reserved_bytes, kLargeBuffer);    // freed blocks stay cached
  f.allocator->reset_peak_stats();
  stats = f.allocator->stats();
  EXPECT_EQ(stats.peak_allocated_bytes, 3 * kMiB);
  EXPECT_EQ(stats.peak_reserved_bytes, kLargeBuffer);
  f.allocator->free(a);
  f.allocator->empty_cache();
  stats = f.allocator->stats();
  EXPECT_EQ(stats.allocated_bytes, 0u);
  EXPECT_EQ(stats.reserved_bytes, 0u);
  EXPECT_EQ(stats.peak_reserved_bytes, kLargeBuffer);
  EXPECT_EQ(stats.num_device_allocations, 1u);
  EXPECT_EQ(stats.num_device_frees, 1u);
}

TEST(CachingAllocator, ABlockFreedByOneStreamIsNotGivenToAnother) {
  Fixture f;
  void* on_a = f.allocator->allocate(4096, kStreamA);
  f.allocator->free(on_a);
  void* on_b = f.allocator->allocate(4096, kStreamB);
  EXPECT_NE(on_b, on_a);
  EXPECT_EQ(f.allocator->stats().num_device_allocations, 2u);
  void* back_on_a = f.allocator->allocate(4096, kStreamA);
  EXPECT_EQ(back_on_a, on_a);  // stream A still gets it back
  for (void* p : {on_b, back_on_a}) f.allocator->free(p);
}

TEST(CachingAllocator, RecordedStreamDelaysReuseUntilItsEventCompletes) {
  Fixture f;
  void* block = f.allocator->allocate(4096, kStreamA);
  f.allocator->record_stream(block, kStreamB);
  f.allocator->free(block);
  // Stream B may still read it: stream A must not get it back yet.
  void* meanwhile = f.allocator->allocate(4096, kStreamA);
  EXPECT_NE(meanwhile, block);
  f.fake->complete_all_events();
  void* after = f.allocator->allocate(4096, kStreamA);
  EXPECT_EQ(after, block);
  EXPECT_EQ(f.fake->released_events, 1);
  for (void* p : {meanwhile, after}) f.allocator->free(p);
}

TEST(CachingAllocator, RecordStreamNeedsAPointerItHandedOut) {
  Fixture f;
  int not_device_memory = 0;
  EXPECT_ERROR_CONTAINS(f.allocator->record_stream(&not_device_memory, kStreamB),
                        "record_stream: expected the data pointer of a storage allocated on CUDA "
                        "device 0");
}

TEST(CachingAllocator, EmptyCacheReturnsOnlyUnusedSegments) {
  Fixture f;
  void* kept = f.allocator->allocate(12 * kMiB, kStreamA);
  void* dropped = f.allocator->allocate(12 * kMiB, kStreamA);
  f.allocator->free(dropped);
  f.allocator->empty_cache();
  EXPECT_EQ(f.allocator->stats().reserved_bytes, 12 * kMiB);
  EXPECT_EQ(f.fake->used(), 12 * kMiB);
  EXPECT_EQ(f.allocator->stats().num_device_frees, 1u);
  f.allocator->free(kept);
}

TEST(CachingAllocator, OutOfMemoryFreesTheCacheAndRetries) {
  Fixture f(40 * kMiB);
  void* first = f.allocator->allocate(16 * kMiB, kStreamA);
  f.allocator->free(first);  // 16 MiB cached
  // 30 MiB does not fit beside the cached 16 MiB: the cache goes back, then it fits.
  void* second = f.allocator->allocate(30 * kMiB, kStreamA);
  EXPECT_NE(second, nullptr);
  const MemoryStats stats = f.allocator->stats();
  EXPECT_EQ(stats.num_device_frees, 1u);
  EXPECT_EQ(stats.num_device_allocations, 2u);
  EXPECT_EQ(stats.reserved_bytes, 30 * kMiB);
  EXPECT_EQ(f.fake->allocate_calls, 3);  // first, failed try, retry
  f.allocator->free(second);
}

TEST(CachingAllocator, OutOfMemoryFirstWaitsForBlocksOtherStreamsWereUsing) {
  Fixture f(40 * kMiB);
  void* used_on_b = f.allocator->allocate(16 * kMiB, kStreamA);
  f.allocator->record_stream(used_on_b, kStreamB);
  f.allocator->free(used_on_b);  // waits for stream B's event, which has not passed
  // 30 MiB fits only once that block is back and its segment returned to the driver.
  void* big = f.allocator->allocate(30 * kMiB, kStreamA);
  EXPECT_NE(big, nullptr);
  EXPECT_EQ(f.fake->synchronize_event_calls, 1);
  EXPECT_EQ(f.fake->released_events, 1);
  EXPECT_EQ(f.allocator->stats().num_device_frees, 1u);
  f.allocator->free(big);
}

TEST(CachingAllocator, OutOfMemorySaysWhatWasAskedAllocatedAndReserved) {
  Fixture f(40 * kMiB);
  void* held = f.allocator->allocate(30 * kMiB, kStreamA);
  EXPECT_ERROR_CONTAINS(
      f.allocator->allocate(20 * kMiB, kStreamA),
      "CUDA out of memory on device 0: tried to allocate 20.00 MiB (20971520 bytes, rounded to "
      "20971520, from a new segment of 20971520 bytes); minidl has 30.00 MiB (31457280 bytes) "
      "allocated to tensors and 30.00 MiB (31457280 bytes) reserved on this device");
  // The failed request changed nothing.
  EXPECT_EQ(f.allocator->stats().allocated_bytes, 30 * kMiB);
  f.allocator->free(held);
}

TEST(CachingAllocator, ConcurrentAllocationsAreConsistent) {
  Fixture f;
  constexpr int kThreads = 4, kRounds = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&f, t] {
      const StreamHandle stream = fake_stream(0x1000 + static_cast<uintptr_t>(t % 2));
      for (int i = 0; i < kRounds; ++i) {
        void* a = f.allocator->allocate(static_cast<size_t>(512 * (1 + i % 7)), stream);
        void* b = f.allocator->allocate(static_cast<size_t>(3 * kMiB), stream);
        f.allocator->free(a);
        f.allocator->free(b);
      }
    });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(f.allocator->stats().allocated_bytes, 0u);
  f.allocator->empty_cache();
  EXPECT_EQ(f.allocator->stats().reserved_bytes, 0u);
  EXPECT_EQ(f.fake->used(), 0u);
}

TEST(CachingAllocator, WithoutAGpuAllocationIsAClearError) {
  if (is_available()) GTEST_SKIP() << "a CUDA device is present; this checks the CPU-only path";
  EXPECT_ERROR_CONTAINS(CachingAllocator::allocate_shared(16, 0),
                        "CUDA allocation: no CUDA device is available");
  EXPECT_ERROR_CONTAINS(empty({2}, Device(kCUDA)), "no CUDA device is available");
  empty_cache();  // nothing to do, and no error
}

}  // namespace
}  // namespace minidl::cuda
