#pragma once
// The pinned pool's policy (core/cuda/pinned_allocator.h) apart from the memory and events it
// runs on: the process's pool runs it over cudaHostAlloc and CUDA events, or over aligned host
// memory without a GPU (pinned_allocator.cpp); tests run it over a fake
// (tests/core/pinned_pool_test.cpp).
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "minidl/core/cuda/pinned_allocator.h"
#include "minidl/core/cuda/stream.h"

namespace minidl::cuda {

// What the pool asks of the system.
class PinnedHostMemory {
 public:
  virtual ~PinnedHostMemory() = default;

  // Whether blocks are page-locked, so that streams read them asynchronously. Without it
  // (the host fallback) no stream can read a block behind the host's back.
  virtual bool page_locked() const = 0;
  // `nbytes` of host memory aligned to 64 bytes; throws minidl::Error when there is none.
  virtual void* allocate(size_t nbytes) = 0;
  virtual void free(void* ptr) = 0;
  // Records an event on `stream` (on the stream's device) and returns whether the work queued
  // on it before has finished, asked as often as needed.
  virtual std::function<bool()> record_event(const Stream& stream) = 0;
};

class PinnedPool {
 public:
  explicit PinnedPool(std::unique_ptr<PinnedHostMemory> memory);

  void* allocate(size_t nbytes);
  void free(void* ptr);
  bool contains(const void* ptr);
  // See record_pinned_use. Streams are told apart by handle and device.
  void record_use(const void* ptr, const Stream& stream);
  PinnedMemoryStats stats();
  void empty_cache();
  bool page_locked() const { return page_locked_; }

 private:
  struct BlockInfo {
    size_t size = 0;
    bool in_use = false;
    std::vector<Stream> streams;                     // record_use since the allocation
    std::vector<std::function<bool()>> events_done;  // after free: wait for these before reuse
  };
  using BlockMap = std::map<const void*, BlockInfo, std::less<>>;

  BlockMap::iterator block_containing(const void* ptr);
  void record_events(BlockInfo& block);
  void process_completed_events();

  const std::unique_ptr<PinnedHostMemory> memory_;
  const bool page_locked_;
  std::mutex mutex_;
  BlockMap blocks_;                                   // every block the pool owns, by address
  std::map<size_t, std::vector<void*>> free_blocks_;  // cached blocks, by size
  std::vector<void*> blocks_awaiting_events_;
  PinnedMemoryStats stats_;
};

}  // namespace minidl::cuda
