// The pinned pool's policy over a fake system (core/cuda/pinned_pool.h): a freed block that
// streams read is handed out again only after an event on each of those streams has passed,
// and two devices' default streams (both the null handle) each get their own event.
#include "minidl/core/cuda/pinned_pool.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <set>
#include <vector>

#include "minidl/core/error.h"
#include "test_util.h"

namespace minidl::cuda {
namespace {

// Page-locked as far as the pool can tell, with events that pass when the test says so.
class FakePinnedMemory final : public PinnedHostMemory {
 public:
  struct RecordedEvent {
    Stream stream;
    bool passed = false;
  };

  bool page_locked() const override { return true; }
  void* allocate(size_t nbytes) override {
    MINIDL_CHECK(nbytes <= capacity_left, "fake pinned memory: out of memory");
    capacity_left -= nbytes;
    void* ptr = std::aligned_alloc(64, nbytes);
    live_.insert(ptr);
    return ptr;
  }
  void free(void* ptr) override {
    live_.erase(ptr);
    std::free(ptr);
  }
  std::function<bool()> record_event(const Stream& stream) override {
    events.push_back(std::make_shared<RecordedEvent>(RecordedEvent{stream}));
    return [event = events.back()] { return event->passed; };
  }
  ~FakePinnedMemory() override {
    for (void* ptr : live_) std::free(ptr);
  }

  std::vector<std::shared_ptr<RecordedEvent>> events;
  size_t capacity_left = size_t{1} << 30;

 private:
  std::set<void*> live_;
};

struct Fixture {
  Fixture() {
    auto memory = std::make_unique<FakePinnedMemory>();
    fake = memory.get();
    pool = std::make_unique<PinnedPool>(std::move(memory));
  }
  FakePinnedMemory* fake;
  std::unique_ptr<PinnedPool> pool;
};

TEST(PinnedPool, ABlockReadByTwoDevicesDefaultStreamsWaitsForBoth) {
  Fixture f;
  void* block = f.pool->allocate(4096);
  f.pool->record_use(block, Stream::default_stream(0));
  f.pool->record_use(block, Stream::default_stream(1));
  f.pool->record_use(block, Stream::default_stream(1));  // the same stream again: one event
  f.pool->free(block);
  ASSERT_EQ(f.fake->events.size(), 2u);
  EXPECT_EQ(f.fake->events[0]->stream.device(), 0);
  EXPECT_EQ(f.fake->events[1]->stream.device(), 1);

  f.fake->events[0]->passed = true;  // device 0's copy is done, device 1's is not
  void* while_device_1_reads = f.pool->allocate(4096);
  EXPECT_NE(while_device_1_reads, block);
  f.fake->events[1]->passed = true;
  EXPECT_EQ(f.pool->allocate(4096), block);
}

TEST(PinnedPool, ABlockNoStreamReadIsReusedAtOnce) {
  Fixture f;
  void* block = f.pool->allocate(1000);  // rounds to 1024
  f.pool->free(block);
  EXPECT_TRUE(f.fake->events.empty());
  EXPECT_EQ(f.pool->allocate(1024), block);
  EXPECT_EQ(f.pool->stats().num_host_allocations, 1u);
}

TEST(PinnedPool, EmptyCacheKeepsBlocksStillAwaitingTheirEvents) {
  Fixture f;
  void* block = f.pool->allocate(512);
  f.pool->record_use(block, Stream::default_stream(0));
  f.pool->free(block);
  f.pool->empty_cache();
  EXPECT_EQ(f.pool->stats().num_host_frees, 0u);
  EXPECT_TRUE(f.pool->contains(block));
  f.fake->events[0]->passed = true;
  f.pool->empty_cache();
  EXPECT_EQ(f.pool->stats().num_host_frees, 1u);
  EXPECT_FALSE(f.pool->contains(block));
}

TEST(PinnedPool, OutOfMemorySaysHowMuchThePoolHolds) {
  Fixture f;
  void* held = f.pool->allocate(2048);
  f.fake->capacity_left = 0;
  EXPECT_ERROR_CONTAINS(f.pool->allocate(512),
                        "2048 bytes of pinned memory are already reserved by the pool");
  f.pool->free(held);
}

}  // namespace
}  // namespace minidl::cuda
