#include "minidl/core/cpu_allocator.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <new>

#include "minidl/core/cpu_block_cache.h"
#include "minidl/core/error.h"

namespace minidl::cpu {

namespace {

void* aligned_block(size_t bytes) { return std::aligned_alloc(kAlignment, bytes); }
void free_block(void* block) { std::free(block); }

// A quarter of the machine's memory at most is kept in freed blocks.
size_t cache_capacity() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return size_t{1} << 30;
  return static_cast<size_t>(pages) * static_cast<size_t>(page_size) / 4;
}

BlockCache& large_blocks() {
  // Never destroyed: tensors freed by other static destructors may still give blocks back.
  static BlockCache* cache = new BlockCache(cache_capacity(), aligned_block, free_block);
  return *cache;
}

size_t round_up(size_t bytes, size_t multiple) {
  return (bytes + multiple - 1) / multiple * multiple;
}

}  // namespace

std::shared_ptr<void> allocate(size_t nbytes) {
  if (nbytes >= BlockCache::kGranularity) {
    const size_t bytes = round_up(nbytes, BlockCache::kGranularity);
    void* block = large_blocks().take(bytes);
    MINIDL_CHECK(block != nullptr, "CPU allocator: out of memory allocating ", nbytes, " bytes");
    return std::shared_ptr<void>(block, [bytes](void* p) { large_blocks().give(p, bytes); });
  }
  // aligned_alloc needs a size that is a multiple of the alignment; zero bytes still gets a
  // unique non-null pointer so empty tensors have a valid data pointer.
  const size_t rounded = std::max(round_up(nbytes, kAlignment), kAlignment);
  void* ptr = aligned_block(rounded);
  MINIDL_CHECK(ptr != nullptr, "CPU allocator: out of memory allocating ", nbytes, " bytes");
  return std::shared_ptr<void>(ptr, free_block);
}

size_t cached_bytes() { return large_blocks().cached_bytes(); }

void empty_cache() { large_blocks().release_all(); }

}  // namespace minidl::cpu
