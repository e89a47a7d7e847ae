// The pinned host pool. Without a GPU it runs on its aligned host fallback, which has the same
// caching policy; page-locking itself is checked in the CUDA runtime tests.
#include "minidl/core/cuda/pinned_allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "test_util.h"

namespace minidl::cuda {
namespace {

TEST(PinnedAllocator, FreedBlockIsReusedForTheSameRoundedSize) {
  const PinnedMemoryStats before = pinned_memory_stats();
  void* first = nullptr;
  {
    std::shared_ptr<void> block = allocate_pinned(3000);  // rounds to 4096
    first = block.get();
    EXPECT_EQ(pinned_memory_stats().allocated_bytes, before.allocated_bytes + 4096);
  }
  EXPECT_EQ(pinned_memory_stats().allocated_bytes, before.allocated_bytes);
  std::shared_ptr<void> again = allocate_pinned(4000);
  EXPECT_EQ(again.get(), first);
  EXPECT_EQ(pinned_memory_stats().num_host_allocations, before.num_host_allocations + 1);
}

TEST(PinnedAllocator, BlocksAreAlignedAndWritable) {
  std::shared_ptr<void> block = allocate_pinned(1000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(block.get()) % 64, 0u);
  std::memset(block.get(), 0xab, 1000);
  EXPECT_EQ(static_cast<unsigned char*>(block.get())[999], 0xab);
}

TEST(PinnedAllocator, IsPinnedKnowsItsBlocksIncludingInteriorPointers) {
  std::shared_ptr<void> block = allocate_pinned(2048);
  EXPECT_TRUE(is_pinned(block.get()));
  EXPECT_TRUE(is_pinned(static_cast<char*>(block.get()) + 2047));
  int on_the_stack = 0;
  EXPECT_FALSE(is_pinned(&on_the_stack));
  Tensor ordinary = zeros({4});
  EXPECT_FALSE(is_pinned(ordinary.data_ptr()));
}

TEST(PinnedAllocator, EmptyPinnedMakesAUsableCpuTensor) {
  Tensor batch = empty_pinned({2, 3}, kUInt8);
  EXPECT_TRUE(batch.is_cpu());
  EXPECT_EQ(batch.sizes(), (Shape{2, 3}));
  EXPECT_TRUE(batch.is_contiguous());
  EXPECT_TRUE(is_pinned(batch.data_ptr()));
  batch.fill_(7);
  EXPECT_EQ(to_vector<int64_t>(batch), std::vector<int64_t>(6, 7));
  EXPECT_ERROR_CONTAINS(empty_pinned({-1, -2}), "empty_pinned: sizes must be non-negative");
}

TEST(PinnedAllocator, EmptyCacheReturnsUnusedBlocks) {
  { std::shared_ptr<void> transient = allocate_pinned(size_t{1} << 20); }
  std::shared_ptr<void> kept = allocate_pinned(size_t{1} << 21);
  const PinnedMemoryStats before = pinned_memory_stats();
  empty_pinned_cache();
  const PinnedMemoryStats after = pinned_memory_stats();
  EXPECT_GE(after.num_host_frees, before.num_host_frees + 1);
  EXPECT_EQ(after.reserved_bytes, after.allocated_bytes);  // nothing cached is left
  EXPECT_TRUE(is_pinned(kept.get()));                      // blocks in use stay
}

TEST(PinnedAllocator, FallsBackToHostMemoryWithoutAGpu) {
  if (is_available()) GTEST_SKIP() << "a CUDA device is present; this checks the fallback";
  EXPECT_FALSE(pinned_memory_is_page_locked());
  std::shared_ptr<void> block = allocate_pinned(64);
  record_pinned_use(block.get(), Stream());  // no streams without a GPU: nothing to record
  EXPECT_NE(block.get(), nullptr);
}

}  // namespace
}  // namespace minidl::cuda
