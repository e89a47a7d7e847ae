// The CPU allocator's cache of large blocks (core/cpu_block_cache.h, core/cpu_allocator.h):
// reuse by exact size, the capacity, retrying after emptying when the system refuses, and the
// allocator's use of it.
#include "minidl/core/cpu_block_cache.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>
#include <vector>

#include "minidl/core/cpu_allocator.h"
#include "minidl/core/tensor.h"

namespace minidl::cpu {
namespace {

// A system that counts its calls and can be told to refuse.
struct FakeSystem {
  static inline int allocations = 0;
  static inline int frees = 0;
  static inline bool refusing = false;
  static void* allocate(size_t bytes) {
    if (refusing) return nullptr;
    ++allocations;
    return std::malloc(bytes);
  }
  static void free(void* block) {
    ++frees;
    std::free(block);
  }
  static void reset() { allocations = frees = 0, refusing = false; }
};

constexpr size_t kMiB = BlockCache::kGranularity;

TEST(CpuBlockCache, AFreedBlockIsReusedForTheSameSizeOnly) {
  FakeSystem::reset();
  BlockCache cache(16 * kMiB, FakeSystem::allocate, FakeSystem::free);
  void* first = cache.take(2 * kMiB);
  cache.give(first, 2 * kMiB);
  EXPECT_EQ(cache.cached_bytes(), 2 * kMiB);
  EXPECT_EQ(cache.take(2 * kMiB), first);  // the same block, without the system
  EXPECT_EQ(FakeSystem::allocations, 1);
  EXPECT_EQ(cache.cached_bytes(), 0u);
  void* other = cache.take(3 * kMiB);  // another size: a new block
  EXPECT_NE(other, first);
  EXPECT_EQ(FakeSystem::allocations, 2);
  cache.give(first, 2 * kMiB);
  cache.give(other, 3 * kMiB);
  cache.release_all();
  EXPECT_EQ(FakeSystem::frees, 2);
  EXPECT_EQ(cache.cached_bytes(), 0u);
}

TEST(CpuBlockCache, BlocksBeyondTheCapacityGoBackToTheSystem) {
  FakeSystem::reset();
  BlockCache cache(3 * kMiB, FakeSystem::allocate, FakeSystem::free);
  void* a = cache.take(2 * kMiB);
  void* b = cache.take(2 * kMiB);
  cache.give(a, 2 * kMiB);
  cache.give(b, 2 * kMiB);  // 4 MiB would exceed 3 MiB
  EXPECT_EQ(cache.cached_bytes(), 2 * kMiB);
  EXPECT_EQ(FakeSystem::frees, 1);
}

TEST(CpuBlockCache, WhenTheSystemRefusesTheCacheIsEmptiedAndTheRequestRetried) {
  FakeSystem::reset();
  BlockCache cache(16 * kMiB, FakeSystem::allocate, FakeSystem::free);
  cache.give(cache.take(4 * kMiB), 4 * kMiB);
  FakeSystem::refusing = true;
  EXPECT_EQ(cache.take(1 * kMiB), nullptr);  // still refused after emptying
  EXPECT_EQ(FakeSystem::frees, 1);           // the cached 4 MiB went back first
  EXPECT_EQ(cache.cached_bytes(), 0u);
  FakeSystem::refusing = false;
}

TEST(CpuBlockCache, ThreadsTakingAndGivingConcurrentlyKeepTheCountRight) {
  FakeSystem::reset();
  BlockCache cache(64 * kMiB, FakeSystem::allocate, FakeSystem::free);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        void* block = cache.take(kMiB);
        static_cast<char*>(block)[0] = 1;
        cache.give(block, kMiB);
      }
    });
  for (std::thread& thread : threads) thread.join();
  EXPECT_LE(FakeSystem::allocations, 4);  // at most one block per thread was ever needed
  EXPECT_EQ(cache.cached_bytes(), static_cast<size_t>(FakeSystem::allocations) * kMiB);
}

TEST(CpuAllocator, ALargeTensorFreedBetweenStepsIsServedFromTheCache) {
  empty_cache();
  const Shape sizes{4, 1024, 1024};  // 16 MiB of float32
  const void* first = nullptr;
  {
    Tensor t = empty(sizes);
    first = t.data_ptr();
  }
  EXPECT_GE(cached_bytes(), size_t{16} << 20);
  Tensor again = empty(sizes);
  EXPECT_EQ(again.data_ptr(), first);
  empty_cache();
  EXPECT_EQ(cached_bytes(), 0u);
}

}  // namespace
}  // namespace minidl::cpu
