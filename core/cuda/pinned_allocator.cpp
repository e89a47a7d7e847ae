// The pinned host memory pool (policy in pinned_allocator.h).
#include "minidl/core/cuda/pinned_allocator.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "minidl/core/cpu_allocator.h"
#include "minidl/core/cuda/cuda.h"
#include "minidl/core/error.h"
#include "minidl/core/logging.h"

#if MINIDL_WITH_CUDA
#include <cuda_runtime.h>

#include "minidl/core/cuda/check.h"
#endif

namespace minidl::cuda {

namespace {

size_t round_to_power_of_two(size_t nbytes) {
  size_t size = kMinPinnedBlockSize;
  while (size < nbytes) size *= 2;
  return size;
}

class PinnedPool {
 public:
  PinnedPool() : page_locked_(is_available()) {}

  void* allocate(size_t nbytes) {
    const size_t size = round_to_power_of_two(nbytes);
    std::lock_guard lock(mutex_);
    process_completed_events();
    std::vector<void*>& free_list = free_blocks_[size];
    void* ptr = nullptr;
    if (!free_list.empty()) {
      ptr = free_list.back();
      free_list.pop_back();
    } else {
      ptr = allocate_from_system(size);
      blocks_[ptr].size = size;
      ++stats_.num_host_allocations;
      stats_.reserved_bytes += size;
    }
    blocks_.at(ptr).in_use = true;
    stats_.allocated_bytes += size;
    return ptr;
  }

  void free(void* ptr) {
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

  bool contains(const void* ptr) {
    std::lock_guard lock(mutex_);
    return block_containing(ptr) != blocks_.end();
  }

  void record_use(const void* ptr, const Stream& stream) {
    if (!page_locked_) return;  // no device, so no stream can read the block behind our back
    std::lock_guard lock(mutex_);
    const auto found = block_containing(ptr);
    if (found == blocks_.end() || !found->second.in_use) return;
    std::vector<Stream>& streams = found->second.streams;
    if (std::find(streams.begin(), streams.end(), stream) == streams.end())
      streams.push_back(stream);
  }

  PinnedMemoryStats stats() {
    std::lock_guard lock(mutex_);
    return stats_;
  }

  void empty_cache() {
    std::lock_guard lock(mutex_);
    process_completed_events();
    for (auto& [size, free_list] : free_blocks_) {
      for (void* ptr : free_list) {
        free_to_system(ptr);
        blocks_.erase(ptr);
        ++stats_.num_host_frees;
        stats_.reserved_bytes -= size;
      }
      free_list.clear();
    }
  }

  bool page_locked() const { return page_locked_; }

 private:
  struct BlockInfo {
    size_t size = 0;
    bool in_use = false;
    std::vector<Stream> streams;                 // record_use since the allocation
    std::vector<std::unique_ptr<Event>> events;  // after free: wait for these before reuse
  };
  using BlockMap = std::map<const void*, BlockInfo, std::less<>>;

  BlockMap::iterator block_containing(const void* ptr) {
    auto after = blocks_.upper_bound(ptr);
    if (after == blocks_.begin()) return blocks_.end();
    auto candidate = std::prev(after);
    const char* start = static_cast<const char*>(candidate->first);
    const char* target = static_cast<const char*>(ptr);
    return target < start + candidate->second.size ? candidate : blocks_.end();
  }

  void record_events(BlockInfo& block) {
    for (const Stream& stream : block.streams) {
      auto event = std::make_unique<Event>();
      event->record(stream);
      block.events.push_back(std::move(event));
    }
    block.streams.clear();
  }

  void process_completed_events() {
    std::erase_if(blocks_awaiting_events_, [this](void* ptr) {
      BlockInfo& block = blocks_.at(ptr);
      const bool done = std::all_of(block.events.begin(), block.events.end(),
                                    [](const std::unique_ptr<Event>& e) { return e->query(); });
      if (!done) return false;
      block.events.clear();
      free_blocks_[block.size].push_back(ptr);
      return true;
    });
  }

  void* allocate_from_system(size_t size) {
#if MINIDL_WITH_CUDA
    if (page_locked_) {
      void* ptr = nullptr;
      // Portable: pinned for every device, so any GPU's copy stream can read it directly.
      const cudaError_t status = cudaHostAlloc(&ptr, size, cudaHostAllocPortable);
      if (status == cudaErrorMemoryAllocation) (void)cudaGetLastError();
      MINIDL_CHECK(status == cudaSuccess, "pinned allocator: cudaHostAlloc of ", size,
                   " bytes failed: ", cudaGetErrorString(status), " (", stats_.reserved_bytes,
                   " bytes of pinned memory are already reserved)");
      return ptr;
    }
#endif
    void* ptr = std::aligned_alloc(cpu::kAlignment, size);  // size is a power of two >= 512
    MINIDL_CHECK(ptr != nullptr, "pinned allocator (host fallback): out of memory allocating ",
                 size, " bytes");
    return ptr;
  }

  void free_to_system(void* ptr) {
#if MINIDL_WITH_CUDA
    if (page_locked_) {
      MINIDL_CUDA_CHECK(cudaFreeHost(ptr));
      return;
    }
#endif
    std::free(ptr);
  }

  const bool page_locked_;
  std::mutex mutex_;
  BlockMap blocks_;                                   // every block the pool owns, by address
  std::map<size_t, std::vector<void*>> free_blocks_;  // cached blocks, by size
  std::vector<void*> blocks_awaiting_events_;
  PinnedMemoryStats stats_;
};

// Leaked on purpose: pinned batches may be freed during static destruction.
PinnedPool& pool() {
  static PinnedPool* instance = new PinnedPool;
  return *instance;
}

}  // namespace

std::shared_ptr<void> allocate_pinned(size_t nbytes) {
  PinnedPool& pinned = pool();
  return std::shared_ptr<void>(pinned.allocate(nbytes), [&pinned](void* ptr) {
    try {
      pinned.free(ptr);
    } catch (const std::exception& error) {  // a deleter must not throw
      logger().error("pinned allocator: free failed: {}", error.what());
    }
  });
}

Tensor empty_pinned(const Shape& sizes, DType dtype) {
  for (int64_t size : sizes)
    MINIDL_CHECK(size >= 0, "empty_pinned: sizes must be non-negative, got ", sizes);
  const size_t nbytes = static_cast<size_t>(shape_numel(sizes)) * element_size(dtype);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(allocate_pinned(nbytes), nbytes, Device(kCPU));
  impl->sizes = sizes;
  impl->strides = contiguous_strides(sizes);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

bool is_pinned(const void* ptr) { return pool().contains(ptr); }
bool pinned_memory_is_page_locked() { return pool().page_locked(); }
void record_pinned_use(const void* ptr, const Stream& stream) { pool().record_use(ptr, stream); }
PinnedMemoryStats pinned_memory_stats() { return pool().stats(); }
void empty_pinned_cache() { pool().empty_cache(); }

}  // namespace minidl::cuda
