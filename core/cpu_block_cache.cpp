#include "minidl/core/cpu_block_cache.h"

namespace minidl::cpu {

BlockCache::BlockCache(size_t capacity, Allocate allocate, Free free)
    : capacity_(capacity), allocate_(allocate), free_(free) {}

BlockCache::~BlockCache() { release_all(); }

void* BlockCache::take(size_t bytes) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto found = free_blocks_.find(bytes);
    if (found != free_blocks_.end() && !found->second.empty()) {
      void* block = found->second.back();
      found->second.pop_back();
      cached_bytes_ -= bytes;
      return block;
    }
  }
  if (void* block = allocate_(bytes)) return block;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    release_all_locked();
  }
  return allocate_(bytes);
}

void BlockCache::give(void* block, size_t bytes) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (cached_bytes_ + bytes <= capacity_) {
      free_blocks_[bytes].push_back(block);
      cached_bytes_ += bytes;
      return;
    }
  }
  free_(block);
}

void BlockCache::release_all() {
  const std::lock_guard<std::mutex> lock(mutex_);
  release_all_locked();
}

void BlockCache::release_all_locked() {
  for (auto& [bytes, blocks] : free_blocks_)
    for (void* block : blocks) free_(block);
  free_blocks_.clear();
  cached_bytes_ = 0;
}

size_t BlockCache::cached_bytes() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return cached_bytes_;
}

}  // namespace minidl::cpu
