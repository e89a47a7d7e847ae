#pragma once
// Large host blocks kept for reuse after their tensors die (core/cpu_allocator.cpp).
//
// Why: glibc serves a block larger than its mmap threshold (at most 32 MiB) with mmap and gives
// it back with munmap when freed, so every training step had the kernel map and zero its
// activations' pages again: 20% of a ResNet-20 step (batch 512, 2 threads) was clear_page_erms
// and 3% page faults (perf, 2026-11-24). A step allocates the same sizes as the step before, so
// keeping the freed blocks by size and handing them out again removes that cost after the
// first step, as the CUDA caching allocator does for device memory.
//
// Blocks are kept by exact size (callers round sizes to kGranularity): a training loop asks for
// the same sizes every step, and an exact match never wastes memory on a bigger block. The cache
// holds at most `capacity` bytes of free blocks; a block freed beyond that goes back to the
// system, and when the system refuses a block, every cached block is returned and the request
// retried once.
#include <cstddef>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace minidl::cpu {

class BlockCache {
 public:
  using Allocate = void* (*)(size_t bytes);  // nullptr when out of memory
  using Free = void (*)(void* block);

  // Sizes below this are not cached (malloc serves them from its own free lists); larger ones
  // are multiples of kGranularity.
  static constexpr size_t kGranularity = size_t{1} << 20;

  BlockCache(size_t capacity, Allocate allocate, Free free);
  ~BlockCache();  // returns every cached block
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // A block of `bytes` (a multiple of kGranularity): a cached one, else a new one; nullptr when
  // the system has none even after the cache was emptied.
  void* take(size_t bytes);
  // Keeps a block taken with `bytes` for reuse, or frees it when the cache is full.
  void give(void* block, size_t bytes);
  // Returns every cached block to the system.
  void release_all();
  size_t cached_bytes() const;

 private:
  void release_all_locked();

  const size_t capacity_;
  const Allocate allocate_;
  const Free free_;
  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_blocks_;  // by size
  size_t cached_bytes_ = 0;
};

}  // namespace minidl::cpu
