// The caching allocator under CUDA graph capture, on a fake device whose streams the tests put
// into and out of capture: private pools (Note [CUDA graph private pools]) and the driver calls
// deferred while a capture is underway (Note [No driver calls that break a capture]).
#include <gtest/gtest.h>

#include <cstdint>

#include "fake_device_memory.h"
#include "minidl/core/cuda/caching_allocator.h"
#include "test_util.h"

namespace minidl::cuda {
namespace {

using namespace fake_device;

constexpr uint64_t kCaptureId = 7;

// What CudaGraph does around a capture on `stream`, on the fake device.
struct FakeCapture {
  FakeCapture(Fixture& f, StreamHandle stream, MempoolId pool, uint64_t capture_id = kCaptureId)
      : f(f), stream(stream), capture_id(capture_id) {
    f.fake->begin_capture(stream, capture_id);
    f.allocator->begin_allocate_to_pool(pool, capture_id);
  }
  void end() {
    f.fake->end_capture(stream);
    f.allocator->end_allocate_to_pool(capture_id);
  }
  Fixture& f;
  StreamHandle stream;
  uint64_t capture_id;
};

TEST(GraphPool, ACaptureDoesNotReuseBlocksCachedForEagerCode) {
  Fixture f;
  void* eager = f.allocator->allocate(4096, kStreamA);
  f.allocator->free(eager);  // cached in the general small pool of stream A
  FakeCapture capture(f, kStreamA, new_mempool_id());
  void* captured = f.allocator->allocate(4096, kStreamA);
  EXPECT_NE(captured, eager);
  EXPECT_EQ(f.allocator->stats().num_device_allocations, 2u);  // a segment of its own
  f.allocator->free(captured);
  capture.end();
}

TEST(GraphPool, BlocksFreedDuringACaptureServeTheSameCapture) {
  Fixture f;
  FakeCapture capture(f, kStreamA, new_mempool_id());
  void* first = f.allocator->allocate(4096, kStreamA);
  f.allocator->free(first);
  void* second = f.allocator->allocate(4096, kStreamA);
  EXPECT_EQ(second, first);  // replays run in capture order, so the reuse is safe
  EXPECT_EQ(f.allocator->stats().num_device_allocations, 1u);
  f.allocator->free(second);
  capture.end();
}

TEST(GraphPool, AfterTheCaptureItsBlocksAreNeverGivenToEagerCode) {
  Fixture f;
  const MempoolId pool = new_mempool_id();
  FakeCapture capture(f, kStreamA, pool);
  void* captured = f.allocator->allocate(4096, kStreamA);
  capture.end();
  f.allocator->free(captured);  // e.g. the graph's output tensor, dropped later
  void* eager = f.allocator->allocate(4096, kStreamA);
  EXPECT_NE(eager, captured);  // a replay could still write to `captured`
  EXPECT_EQ(f.allocator->stats().num_device_allocations, 2u);
  f.allocator->free(eager);
  f.allocator->release_pool(pool);
}

TEST(GraphPool, WhileCapturingOtherStreamsUseTheGeneralPools) {
  Fixture f;
  void* cached_on_b = f.allocator->allocate(4096, kStreamB);
  f.allocator->free(cached_on_b);
  FakeCapture capture(f, kStreamA, new_mempool_id());
  void* on_b = f.allocator->allocate(4096, kStreamB);  // not captured: the general pool
  EXPECT_EQ(on_b, cached_on_b);
  f.allocator->free(on_b);
  capture.end();
}

TEST(GraphPool, AReleasedPoolFreesEachSegmentOnceItIsEntirelyFree) {
  Fixture f;
  const MempoolId pool = new_mempool_id();
  FakeCapture capture(f, kStreamA, pool);
  void* kept = f.allocator->allocate(3 * kMiB, kStreamA);  // a 20 MiB segment
  void* freed = f.allocator->allocate(4096, kStreamA);     // a 2 MiB segment
  f.allocator->free(freed);
  capture.end();
  EXPECT_EQ(f.allocator->stats().reserved_bytes, kLargeBuffer + kSmallBuffer);
  f.allocator->release_pool(pool);  // the graph is gone, but `kept` is still in use
  EXPECT_EQ(f.allocator->private_pool_count(), 1u);
  EXPECT_EQ(f.allocator->stats().num_device_frees, 1u);  // the small segment, entirely free
  EXPECT_EQ(f.allocator->stats().reserved_bytes, kLargeBuffer);
  f.allocator->free(kept);
  EXPECT_EQ(f.allocator->private_pool_count(), 0u);
  EXPECT_EQ(f.allocator->stats().num_device_frees, 2u);
  EXPECT_EQ(f.allocator->stats().reserved_bytes, 0u);
  EXPECT_EQ(f.fake->used(), 0u);
}

TEST(GraphPool, AReleasedPoolWithNothingInUseIsFreedAtOnce) {
  Fixture f;
  const MempoolId pool = new_mempool_id();
  FakeCapture capture(f, kStreamA, pool);
  f.allocator->free(f.allocator->allocate(12 * kMiB, kStreamA));
  capture.end();
  EXPECT_EQ(f.fake->used(), 12 * kMiB);  // not cache: empty_cache leaves it to the graph
  f.allocator->empty_cache();
  EXPECT_EQ(f.fake->used(), 12 * kMiB);
  f.allocator->release_pool(pool);
  EXPECT_EQ(f.fake->used(), 0u);
  EXPECT_EQ(f.allocator->private_pool_count(), 0u);
}

TEST(GraphPool, CapturesWithTheSamePoolShareItsBlocks) {
  Fixture f;
  const MempoolId pool = new_mempool_id();
  FakeCapture first(f, kStreamA, pool, 1);
  void* from_first = f.allocator->allocate(4096, kStreamA);
  f.allocator->free(from_first);
  first.end();
  FakeCapture second(f, kStreamA, pool, 2);
  void* from_second = f.allocator->allocate(4096, kStreamA);
  EXPECT_EQ(from_second, from_first);
  f.allocator->free(from_second);
  second.end();
  f.allocator->release_pool(pool);  // the first graph
  EXPECT_EQ(f.allocator->private_pool_count(), 1u);
  f.allocator->release_pool(pool);  // the second
  EXPECT_EQ(f.allocator->private_pool_count(), 0u);
  EXPECT_EQ(f.fake->used(), 0u);
}

TEST(GraphPool, WithoutACaptureTheAllocatorNeverAsksAboutCapture) {
  Fixture f;
  f.allocator->free(f.allocator->allocate(4096, kStreamA));
  EXPECT_EQ(f.fake->capture_status_calls, 0);
}

TEST(GraphPool, AStreamCapturedByACaptureMinidlDidNotStartIsAnError) {
  Fixture f;
  FakeCapture ours(f, kStreamA, new_mempool_id());
  f.fake->begin_capture(kStreamB, 99);  // begun with the raw CUDA API
  EXPECT_ERROR_CONTAINS(f.allocator->allocate(4096, kStreamB),
                        "CUDA allocation on device 0: the stream is being captured into a CUDA "
                        "graph (capture id 99) that minidl did not start");
  ours.end();
}

TEST(GraphPool, EventsOfOtherStreamsAreNeitherRecordedNorQueriedDuringACapture) {
  Fixture f;
  void* before = f.allocator->allocate(4096, kStreamA);
  f.allocator->record_stream(before, kStreamB);
  f.allocator->free(before);  // outside the capture: its event is recorded now
  EXPECT_EQ(f.fake->record_event_calls, 1);
  void* during = f.allocator->allocate(4096, kStreamA);
  f.allocator->record_stream(during, kStreamB);

  const MempoolId pool = new_mempool_id();
  FakeCapture capture(f, kStreamA, pool);
  f.fake->complete_all_events();
  const int queries_before = f.fake->event_completed_calls;
  f.allocator->free(during);  // would record an event on B: deferred
  EXPECT_EQ(f.fake->record_event_calls, 1);
  void* captured = f.allocator->allocate(4096, kStreamA);  // would query events: deferred
  EXPECT_EQ(f.fake->event_completed_calls, queries_before);
  f.allocator->free(captured);
  capture.end();

  // The first allocation after the capture records the deferred event and processes both.
  void* after = f.allocator->allocate(4096, kStreamA);
  EXPECT_EQ(f.fake->record_event_calls, 2);
  EXPECT_GT(f.fake->event_completed_calls, queries_before);
  EXPECT_EQ(after, before);  // the first block's event had passed: it is back in the pool
  f.fake->complete_all_events();
  void* later = f.allocator->allocate(4096, kStreamA);
  EXPECT_EQ(later, during);  // and the deferred one once its event passed
  for (void* p : {after, later}) f.allocator->free(p);
  f.allocator->release_pool(pool);
}

TEST(GraphPool, OutOfMemoryDuringACaptureKeepsTheCacheAndSaysWhy) {
  Fixture f(40 * kMiB);
  f.allocator->free(f.allocator->allocate(16 * kMiB, kStreamA));  // 16 MiB cached
  const MempoolId pool = new_mempool_id();
  FakeCapture capture(f, kStreamA, pool);
  // Outside a capture the cache would go back to the driver and this would fit (see
  // CachingAllocator.OutOfMemoryFreesTheCacheAndRetries); cudaFree is not allowed now.
  EXPECT_ERROR_CONTAINS(f.allocator->allocate(30 * kMiB, kStreamA),
                        "A CUDA graph was being captured, so cached memory could not go back to "
                        "the driver first");
  EXPECT_EQ(f.allocator->stats().num_device_frees, 0u);
  capture.end();
  f.allocator->release_pool(pool);
}

TEST(GraphPool, EmptyCacheDuringACaptureIsAnError) {
  Fixture f;
  FakeCapture capture(f, kStreamA, new_mempool_id());
  EXPECT_ERROR_CONTAINS(f.allocator->empty_cache(),
                        "empty_cache: a CUDA graph is being captured on device 0");
  capture.end();
  f.allocator->empty_cache();  // fine again
}

// GraphCapture's release before it begins, with another capture already underway on the device.
TEST(GraphPool, EmptyCacheUnlessCapturingLeavesTheCacheDuringACapture) {
  Fixture f;
  f.allocator->free(f.allocator->allocate(4096, kStreamA));  // one cached segment
  const MempoolId pool = new_mempool_id();
  FakeCapture capture(f, kStreamB, pool);
  EXPECT_FALSE(f.allocator->empty_cache_unless_capturing());
  EXPECT_EQ(f.allocator->stats().num_device_frees, 0u);
  capture.end();
  EXPECT_TRUE(f.allocator->empty_cache_unless_capturing());
  EXPECT_EQ(f.allocator->stats().num_device_frees, 1u);
  EXPECT_EQ(f.allocator->stats().reserved_bytes, 0u);
  f.allocator->release_pool(pool);
}

TEST(GraphPool, APoolReleasedDuringAnotherCaptureIsFreedAfterIt) {
  Fixture f;
  const MempoolId first_pool = new_mempool_id();
  FakeCapture first(f, kStreamA, first_pool, 1);
  f.allocator->free(f.allocator->allocate(4096, kStreamA));
  first.end();
  const MempoolId second_pool = new_mempool_id();
  FakeCapture second(f, kStreamB, second_pool, 2);
  f.allocator->release_pool(first_pool);  // no cudaFree during the second capture
  EXPECT_EQ(f.allocator->stats().num_device_frees, 0u);
  EXPECT_EQ(f.allocator->private_pool_count(), 2u);
  second.end();
  f.allocator->free(f.allocator->allocate(4096, kStreamA));  // the first call after it
  EXPECT_EQ(f.allocator->stats().num_device_frees, 1u);
  EXPECT_EQ(f.allocator->private_pool_count(), 1u);
  f.allocator->release_pool(second_pool);
}

TEST(GraphPool, PrivateBlocksCountInTheStatistics) {
  Fixture f;
  const MempoolId pool = new_mempool_id();
  FakeCapture capture(f, kStreamA, pool);
  void* captured = f.allocator->allocate(3 * kMiB, kStreamA);
  capture.end();
  EXPECT_EQ(f.allocator->stats().allocated_bytes, 3 * kMiB);
  EXPECT_EQ(f.allocator->stats().reserved_bytes, kLargeBuffer);
  f.allocator->free(captured);
  EXPECT_EQ(f.allocator->stats().allocated_bytes, 0u);
  f.allocator->release_pool(pool);
  EXPECT_EQ(f.allocator->stats().reserved_bytes, 0u);
}

// Note [Memory written between replays]: the host uploads such a table before the replay, so a
// block that earlier kernels of the same graph write (one freed during the capture) would be
// overwritten before the graph reads it.
TEST(GraphPool, MemoryWrittenBetweenReplaysSharesNoBytesWithTheCapturesOtherBlocks) {
  Fixture f;
  const MempoolId pool = new_mempool_id();
  FakeCapture capture(f, kStreamA, pool);
  void* temporary = f.allocator->allocate(4096, kStreamA);  // e.g. an activation
  f.allocator->free(temporary);
  void* table = f.allocator->allocate_replay_input(4096, kStreamA);
  const auto begin = reinterpret_cast<uintptr_t>(table);
  const auto freed = reinterpret_cast<uintptr_t>(temporary);
  EXPECT_TRUE(freed + 4096 <= begin || begin + 4096 <= freed)
      << "the table overlaps a block freed earlier in the capture";
  EXPECT_EQ(f.allocator->stats().num_device_allocations, 2u);  // a segment of its own
  void* later = f.allocator->allocate(4096, kStreamA);  // the segments' rest serves the capture
  EXPECT_EQ(f.allocator->stats().num_device_allocations, 2u);
  for (void* p : {later, table}) f.allocator->free(p);
  capture.end();
  f.allocator->release_pool(pool);
}

TEST(GraphPool, MemoryWrittenBetweenReplaysIsOrdinaryMemoryOutsideACapture) {
  Fixture f;
  void* cached = f.allocator->allocate(4096, kStreamA);
  f.allocator->free(cached);
  void* table = f.allocator->allocate_replay_input(4096, kStreamA);
  EXPECT_EQ(table, cached);
  f.allocator->free(table);
}

// A block freed during a capture after another stream used it waits for the end of the capture
// (its events cannot be recorded before). Freeing its neighbour must not merge it back into the
// pool: the merged block would be handed out while the other stream may still read it, and the
// parked bookkeeping would then point at a deleted block.
TEST(GraphPool, ABlockWaitingForTheEndOfACaptureIsNotMergedWithItsNeighbour) {
  Fixture f;
  void* x = f.allocator->allocate(4096, kStreamA);
  void* y = f.allocator->allocate(4096, kStreamA);  // x's neighbour in the same segment
  ASSERT_EQ(static_cast<char*>(x) + 4096, static_cast<char*>(y));
  f.allocator->record_stream(y, kStreamB);
  const StreamHandle capturing = fake_stream(0x300);
  const MempoolId pool = new_mempool_id();
  FakeCapture capture(f, capturing, pool);
  f.allocator->free(y);  // parked until the capture ends
  f.allocator->free(x);
  void* wide = f.allocator->allocate(8192, kStreamA);
  const auto begin = reinterpret_cast<uintptr_t>(wide);
  const auto parked = reinterpret_cast<uintptr_t>(y);
  EXPECT_TRUE(parked + 4096 <= begin || begin + 8192 <= parked)
      << "a block stream B may still read was handed out again";
  capture.end();
  f.allocator->free(wide);
  f.fake->complete_all_events();
  void* after = f.allocator->allocate(4096, kStreamA);  // records and processes y's event
  f.allocator->free(after);
  f.allocator->release_pool(pool);
}

// tools/bench resets the peak before the warm-up and the capture, not after: a captured step's
// activations are allocated once, during the capture, and replays allocate nothing, so a reset
// after the capture would report the weights alone (the figure the README once quoted).
TEST(GraphPool, ACapturedStepsActivationsCountInThePeakOnlyWhenResetBeforeTheCapture) {
  Fixture f;
  constexpr size_t kWeights = 10 * kMiB;
  constexpr size_t kActivations = 50 * kMiB;
  void* weights = f.allocator->allocate(kWeights, kStreamA);
  f.allocator->reset_peak_stats();  // where bench resets
  const MempoolId pool = new_mempool_id();
  FakeCapture capture(f, kStreamA, pool);
  void* activations = f.allocator->allocate(kActivations, kStreamA);
  f.allocator->free(activations);  // freed within the step; every replay writes it again
  capture.end();

  MemoryStats stats = f.allocator->stats();
  EXPECT_EQ(stats.allocated_bytes, kWeights);
  EXPECT_EQ(stats.peak_allocated_bytes, kWeights + kActivations);
  EXPECT_EQ(stats.reserved_bytes, kWeights + kActivations);  // the pool keeps its segment
  EXPECT_EQ(stats.peak_reserved_bytes, kWeights + kActivations);

  f.allocator->reset_peak_stats();  // where bench used to reset: replays would add nothing
  stats = f.allocator->stats();
  EXPECT_EQ(stats.peak_allocated_bytes, kWeights);
  EXPECT_EQ(stats.peak_reserved_bytes, kWeights + kActivations);

  f.allocator->free(weights);
  f.allocator->release_pool(pool);
}

TEST(GraphPool, MempoolIdsAreNeverZeroAndNeverRepeat) {
  const MempoolId a = new_mempool_id(), b = new_mempool_id();
  EXPECT_NE(a, 0u);
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace minidl::cuda
