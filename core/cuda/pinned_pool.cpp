// The pinned pool's policy (stated in pinned_allocator.h).
#include "minidl/core/cuda/pinned_pool.h"

#include <algorithm>

#include "minidl/core/error.h"

namespace minidl::cuda {

namespace {

size_t round_to_power_of_two(size_t nbytes) {
  size_t size = kMinPinnedBlockSize;
  while (size < nbytes) size *= 2;
  return size;
}

}  // namespace

PinnedPool::PinnedPool(std::unique_ptr<PinnedHostMemory> memory)
    : memory_(std::move(memory)), page_locked_(memory_->page_locked()) {}

void* PinnedPool::allocate(size_t nbytes) {
  const size_t size = round_to_power_of_two(nbytes);
  std::lock_guard lock(mutex_);
  process_completed_events();
  std::vector<void*>& free_list = free_blocks_[size];
  void* ptr = nullptr;
  if (!free_list.empty()) {
    ptr = free_list.back();
    free_list.pop_back();
  } else {
    try {
      ptr = memory_->allocate(size);
    } catch (const Error& error) {
      throw Error(
          minidl::detail::concat(error.what(), "; ", stats_.reserved_bytes,
                                 " bytes of pinned memory are already reserved by the pool"));
    }
    blocks_[ptr].size = size;
    ++stats_.num_host_allocations;
    stats_.reserved_bytes += size;
  }
  blocks_.at(ptr).in_use = true;
  stats_.allocated_bytes += size;
  return ptr;
}

void PinnedPool::free(void* ptr) {
  std::lock_guard lock(mutex_);
  BlockInfo& block = blocks_.at(ptr);
  block.in_use = false;
  stats_.allocated_bytes -= block.size;
  if (block.streams.empty()) {
    free_blocks_[block.size].push_back(ptr);
    return;
  }
  record_events(block);
  blocks_awaiting_events_.push_back(ptr);
}

bool PinnedPool::contains(const void* ptr) {
  std::lock_guard lock(mutex_);
  return block_containing(ptr) != blocks_.end();
}

void PinnedPool::record_use(const void* ptr, const Stream& stream) {
  if (!page_locked_) return;  // no device, so no stream can read the block behind our back
  std::lock_guard lock(mutex_);
  const auto found = block_containing(ptr);
  if (found == blocks_.end() || !found->second.in_use) return;
  std::vector<Stream>& streams = found->second.streams;
  if (std::find(streams.begin(), streams.end(), stream) == streams.end()) streams.push_back(stream);
}

PinnedMemoryStats PinnedPool::stats() {
  std::lock_guard lock(mutex_);
  return stats_;
}

void PinnedPool::empty_cache() {
  std::lock_guard lock(mutex_);
  process_completed_events();
  for (auto& [size, free_list] : free_blocks_) {
    for (void* ptr : free_list) {
      memory_->free(ptr);
      blocks_.erase(ptr);
      ++stats_.num_host_frees;
      stats_.reserved_bytes -= size;
    }
    free_list.clear();
  }
}

PinnedPool::BlockMap::iterator PinnedPool::block_containing(const void* ptr) {
  auto after = blocks_.upper_bound(ptr);
  if (after == blocks_.begin()) return blocks_.end();
  auto candidate = std::prev(after);
  const char* start = static_cast<const char*>(candidate->first);
  const char* target = static_cast<const char*>(ptr);
  return target < start + candidate->second.size ? candidate : blocks_.end();
}

void PinnedPool::record_events(BlockInfo& block) {
  for (const Stream& stream : block.streams)
    block.events_done.push_back(memory_->record_event(stream));
  block.streams.clear();
}

void PinnedPool::process_completed_events() {
  std::erase_if(blocks_awaiting_events_, [this](void* ptr) {
    BlockInfo& block = blocks_.at(ptr);
    const bool done = std::all_of(block.events_done.begin(), block.events_done.end(),
                                  [](const std::function<bool()>& passed) { return passed(); });
    if (!done) return false;
    block.events_done.clear();
    free_blocks_[block.size].push_back(ptr);
    return true;
  });
}

}  // namespace minidl::cuda
