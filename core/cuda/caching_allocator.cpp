// The CUDA caching allocator.
//
// Policy (after PyTorch's c10/cuda/CUDACachingAllocator.cpp; constants in caching_allocator.h):
// - Sizes are rounded up to a multiple of kMinBlockSize (512 bytes); a request of 0 bytes gets
//   one minimal block.
// - Two pools: requests up to kSmallSize (1 MiB) are served from the small pool, carved out of
//   kSmallBuffer (2 MiB) segments; larger ones from the large pool, carved out of kLargeBuffer
//   (20 MiB) segments below kMinLargeAlloc (10 MiB), or from a segment of their own, rounded up
//   to kRoundLarge (2 MiB), from there on. Keeping small blocks apart stops them from
//   fragmenting the big segments.
// - Every block belongs to the stream it was allocated on and is reused only by that stream:
//   work on one stream runs in order, so a block freed on the host can be handed out again at
//   once, without waiting for the GPU. Use on another stream needs
//   Note [Using memory on another stream].
// - A request takes the smallest free block of its pool and stream that fits (best fit). If the
//   rest is worth keeping (>= kMinBlockSize in the small pool, > kSmallSize in the large one),
//   the block is split and the rest stays in the pool.
// - A freed block returns to its pool at once and merges with free neighbours of the same
//   segment, so a split segment becomes whole again when all its parts are free.
// - Memory goes back to the driver only in empty_cache(), or when cudaMalloc fails: then every
//   cached whole segment is freed and the cudaMalloc is tried once more. If that fails too,
//   minidl::Error says how much was asked, and how much is allocated and reserved on which
//   device. After warm-up, allocation and free make no driver call.
// - Counters: allocated and reserved bytes, their peaks (reset_peak_memory_stats), cudaMalloc
//   and cudaFree calls. Every operation holds the allocator's mutex.
//
// Note [Using memory on another stream]
//   A tensor allocated on stream A and used on stream B (a batch copied on the copy stream and
//   read by the compute stream; a gradient bucket all-reduced on the communication stream) must
//   not be reused by A while B may still touch it. Either
//   - call record_stream(tensor.storage(), B) after queuing the work on B: when the tensor is
//     freed, the allocator records an event on B and keeps the block out of the pool until the
//     event has passed (checked, without blocking, at the next allocation); or
//   - keep the tensor alive until stream A has waited on an Event recorded on B after its use
//     (Event::record(B), Event::wait(A)), which is what the DataLoader and DDP do.
#include "core/cuda/caching_allocator.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>

#include "core/cuda/cuda.h"
#include "core/error.h"
#include "core/logging.h"
#include "core/storage.h"

namespace minidl::cuda {

// A piece of a segment (one cudaMalloc). The pieces of a segment form a list in address order.
struct DeviceCachingAllocator::Block {
  void* ptr = nullptr;
  size_t size = 0;
  StreamHandle stream = nullptr;  // the stream it was allocated on and is reused by
  bool small = false;             // in the small pool, else the large one
  bool in_use = false;
  Block* prev = nullptr;  // neighbours within the segment
  Block* next = nullptr;
  std::vector<StreamHandle> other_streams;  // record_stream calls since the allocation
  std::vector<EventHandle> pending_events;  // after free: wait for these before reuse

  bool whole_segment() const { return prev == nullptr && next == nullptr; }
  // Free and in a pool (not waiting for other streams).
  bool cached() const { return !in_use && pending_events.empty(); }
};

namespace {

using Block = DeviceCachingAllocator::Block;

// Pools are ordered by (stream, size, address): lower_bound finds the best fit of a stream.
bool block_less(const Block* a, const Block* b) {
  if (a->stream != b->stream) return std::less<StreamHandle>()(a->stream, b->stream);
  if (a->size != b->size) return a->size < b->size;
  return std::less<void*>()(a->ptr, b->ptr);
}

size_t round_size(size_t nbytes) {
  if (nbytes < kMinBlockSize) return kMinBlockSize;
  return (nbytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

// How much to ask the device for when no cached block fits `size` (already rounded).
size_t segment_size(size_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return (size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

bool worth_splitting(const Block& block, size_t size) {
  const size_t rest = block.size - size;
  return block.small ? rest >= kMinBlockSize : rest > kSmallSize;
}

std::string format_bytes(size_t bytes) {
  char text[64];
  const double value = static_cast<double>(bytes);
  if (bytes >= (size_t{1} << 30))
    std::snprintf(text, sizeof text, "%.2f GiB", value / (1 << 30));
  else if (bytes >= (size_t{1} << 20))
    std::snprintf(text, sizeof text, "%.2f MiB", value / (1 << 20));
  else if (bytes >= (size_t{1} << 10))
    std::snprintf(text, sizeof text, "%.2f KiB", value / (1 << 10));
  else
    std::snprintf(text, sizeof text, "%zu bytes", bytes);
  return text;
}

}  // namespace

DeviceCachingAllocator::DeviceCachingAllocator(int device, std::unique_ptr<DeviceMemory> memory)
    : device_(device),
      memory_(std::move(memory)),
      small_pool_(block_less),
      large_pool_(block_less) {
  MINIDL_INTERNAL_ASSERT(memory_ != nullptr, "DeviceCachingAllocator needs a DeviceMemory");
}

DeviceCachingAllocator::~DeviceCachingAllocator() {
  try {
    std::lock_guard lock(mutex_);
    for (Block* block : blocks_awaiting_events_) {
      for (EventHandle event : block->pending_events) memory_->release_event(event);
      block->pending_events.clear();
      return_to_pool(block);
    }
    blocks_awaiting_events_.clear();
    release_cached_segments();
    if (!active_blocks_.empty())
      logger().warn("CUDA caching allocator of device {}: destroyed with {} blocks ({}) in use",
                    device_, active_blocks_.size(), format_bytes(stats_.allocated_bytes));
    // Delete the bookkeeping of what is left (pieces of segments still in use).
    std::vector<Block*> left;
    for (auto& [ptr, block] : active_blocks_) left.push_back(block);
    left.insert(left.end(), small_pool_.begin(), small_pool_.end());
    left.insert(left.end(), large_pool_.begin(), large_pool_.end());
    for (Block* block : left) delete block;
  } catch (const std::exception& error) {
    logger().error("CUDA caching allocator of device {}: {}", device_, error.what());
  }
}

void* DeviceCachingAllocator::allocate(size_t nbytes, StreamHandle stream) {
  std::lock_guard lock(mutex_);
  process_completed_events();
  const size_t size = round_size(nbytes);
  Block* block = take_best_fit(pool_for(size), stream, size);
  if (block == nullptr) block = allocate_segment(size, stream);
  if (block == nullptr) throw_out_of_memory(nbytes, size, segment_size(size));
  if (worth_splitting(*block, size)) split(block, size);
  block->in_use = true;
  active_blocks_.emplace(block->ptr, block);
  add_allocated(block->size);
  return block->ptr;
}

void DeviceCachingAllocator::free(void* ptr) {
  std::lock_guard lock(mutex_);
  const auto found = active_blocks_.find(ptr);
  MINIDL_INTERNAL_ASSERT(found != active_blocks_.end(), "CUDA caching allocator of device ",
                         device_, ": free of a pointer it did not hand out");
  Block* block = found->second;
  active_blocks_.erase(found);
  block->in_use = false;
  stats_.allocated_bytes -= block->size;
  if (block->other_streams.empty()) {
    return_to_pool(block);
    return;
  }
  for (StreamHandle other : block->other_streams)
    block->pending_events.push_back(memory_->record_event(other));
  block->other_streams.clear();
  blocks_awaiting_events_.push_back(block);
}

void DeviceCachingAllocator::record_stream(void* ptr, StreamHandle stream) {
  std::lock_guard lock(mutex_);
  const auto found = active_blocks_.find(ptr);
  MINIDL_CHECK(found != active_blocks_.end(), "record_stream: expected the data pointer of a ",
               "storage allocated on CUDA device ", device_, ", got ", ptr);
  Block* block = found->second;
  if (stream == block->stream) return;  // its own stream orders itself
  if (std::find(block->other_streams.begin(), block->other_streams.end(), stream) ==
      block->other_streams.end())
    block->other_streams.push_back(stream);
}

void DeviceCachingAllocator::empty_cache() {
  std::lock_guard lock(mutex_);
  process_completed_events();
  release_cached_segments();
}

MemoryStats DeviceCachingAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void DeviceCachingAllocator::reset_peak_stats() {
  std::lock_guard lock(mutex_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
  stats_.peak_reserved_bytes = stats_.reserved_bytes;
}

// ---- private; the mutex is held ----

DeviceCachingAllocator::BlockPool& DeviceCachingAllocator::pool_for(size_t size) {
  return size <= kSmallSize ? small_pool_ : large_pool_;
}

DeviceCachingAllocator::Block* DeviceCachingAllocator::take_best_fit(BlockPool& pool,
                                                                     StreamHandle stream,
                                                                     size_t size) {
  Block key;
  key.stream = stream;
  key.size = size;
  const auto found = pool.lower_bound(&key);
  if (found == pool.end() || (*found)->stream != stream) return nullptr;
  Block* block = *found;
  pool.erase(found);
  return block;
}

DeviceCachingAllocator::Block* DeviceCachingAllocator::allocate_segment(size_t size,
                                                                        StreamHandle stream) {
  const size_t bytes = segment_size(size);
  void* ptr = memory_->allocate(bytes);
  if (ptr == nullptr) {
    // The device is full: give back what the cache holds and try once more.
    release_cached_segments();
    ptr = memory_->allocate(bytes);
    if (ptr == nullptr) return nullptr;
  }
  ++stats_.num_device_allocations;
  add_reserved(bytes);
  auto* block = new Block;
  block->ptr = ptr;
  block->size = bytes;
  block->stream = stream;
  block->small = size <= kSmallSize;
  return block;
}

// Cuts `block` down to `size` and puts the rest, as a new free block, into the pool.
void DeviceCachingAllocator::split(Block* block, size_t size) {
  auto* rest = new Block;
  rest->ptr = static_cast<char*>(block->ptr) + size;
  rest->size = block->size - size;
  rest->stream = block->stream;
  rest->small = block->small;
  rest->prev = block;
  rest->next = block->next;
  if (block->next != nullptr) block->next->prev = rest;
  block->next = rest;
  block->size = size;
  (block->small ? small_pool_ : large_pool_).insert(rest);
}

void DeviceCachingAllocator::return_to_pool(Block* block) {
  if (block->prev != nullptr && block->prev->cached()) {
    Block* prev = block->prev;
    merge_with_neighbour(prev, block);  // prev absorbs block
    block = prev;
  }
  if (block->next != nullptr && block->next->cached()) merge_with_neighbour(block, block->next);
  (block->small ? small_pool_ : large_pool_).insert(block);
}

// `first` absorbs `second`, its next neighbour; whichever of the two sat in the pool leaves it.
void DeviceCachingAllocator::merge_with_neighbour(Block* first, Block* second) {
  BlockPool& pool = first->small ? small_pool_ : large_pool_;
  pool.erase(first);  // keyed by size, which changes
  pool.erase(second);
  first->size += second->size;
  first->next = second->next;
  if (second->next != nullptr) second->next->prev = first;
  delete second;
}

void DeviceCachingAllocator::process_completed_events() {
  // Returns a block to its pool once all its events have passed; true then (erase it).
  auto finished_waiting = [this](Block* block) {
    auto& events = block->pending_events;
    while (!events.empty()) {
      if (!memory_->event_completed(events.back())) return false;
      memory_->release_event(events.back());
      events.pop_back();
    }
    return_to_pool(block);
    return true;
  };
  std::erase_if(blocks_awaiting_events_, finished_waiting);
}

void DeviceCachingAllocator::release_cached_segments() {
  for (BlockPool* pool : {&small_pool_, &large_pool_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* block = *it;
      if (!block->whole_segment()) {
        ++it;
        continue;
      }
      memory_->free(block->ptr);
      ++stats_.num_device_frees;
      stats_.reserved_bytes -= block->size;
      it = pool->erase(it);
      delete block;
    }
  }
}

void DeviceCachingAllocator::throw_out_of_memory(size_t nbytes, size_t rounded, size_t segment) {
  using ::minidl::detail::concat;
  const DeviceMemory::Capacity capacity = memory_->capacity();
  const std::string device_state =
      capacity.total_bytes == 0 ? std::string()
                                : concat("; the device has ", format_bytes(capacity.free_bytes),
                                         " free of ", format_bytes(capacity.total_bytes));
  ::minidl::detail::throw_error(
      __FILE__, __LINE__,
      concat("CUDA out of memory on device ", device_, ": tried to allocate ", format_bytes(nbytes),
             " (", nbytes, " bytes, rounded to ", rounded, ", from a new segment of ", segment,
             " bytes); minidl has ", format_bytes(stats_.allocated_bytes), " (",
             stats_.allocated_bytes, " bytes) allocated to tensors and ",
             format_bytes(stats_.reserved_bytes), " (", stats_.reserved_bytes,
             " bytes) reserved on this device", device_state,
             ". Free tensors that are no longer needed or use a smaller batch size."));
}

void DeviceCachingAllocator::add_allocated(size_t bytes) {
  stats_.allocated_bytes += bytes;
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
}

void DeviceCachingAllocator::add_reserved(size_t bytes) {
  stats_.reserved_bytes += bytes;
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
}

// ---- the process-wide allocators ----

DeviceCachingAllocator& CachingAllocator::for_device(int device) {
  require_available("CUDA caching allocator");
  // Built once, for all devices; a function-local static needs no lock after that. Leaked on
  // purpose: tensors may be destroyed during static destruction.
  static const std::vector<DeviceCachingAllocator*>& allocators = *[] {
    auto* list = new std::vector<DeviceCachingAllocator*>;
    for (int d = 0; d < device_count(); ++d)
      list->push_back(new DeviceCachingAllocator(d, make_cuda_device_memory(d)));
    return list;
  }();
  MINIDL_CHECK(device >= 0 && device < static_cast<int>(allocators.size()),
               "CUDA allocation: expected a device index in [0, ", allocators.size(), "), got ",
               device);
  return *allocators[static_cast<size_t>(device)];
}

std::shared_ptr<void> CachingAllocator::allocate_shared(size_t nbytes, int device) {
  require_available("CUDA allocation");
  DeviceCachingAllocator& allocator = for_device(device);
  void* ptr = allocator.allocate(nbytes, current_stream_handle(device));
  return std::shared_ptr<void>(ptr, [&allocator](void* p) {
    try {
      allocator.free(p);
    } catch (const std::exception& error) {  // a deleter must not throw
      logger().error("CUDA caching allocator: free failed: {}", error.what());
    }
  });
}

MemoryStats memory_stats(int device) { return CachingAllocator::for_device(device).stats(); }

void reset_peak_memory_stats(int device) {
  CachingAllocator::for_device(device).reset_peak_stats();
}

void empty_cache() {
  for (int d = 0; d < device_count(); ++d) CachingAllocator::for_device(d).empty_cache();
}

void record_stream(const Storage& storage, const Stream& stream) {
  MINIDL_CHECK(storage.device().is_cuda(), "record_stream: expected a CUDA storage, got one on ",
               storage.device());
  MINIDL_CHECK(stream.device() == storage.device().index, "record_stream: the storage is on ",
               storage.device(), " but the stream on cuda:", stream.device());
  CachingAllocator::for_device(storage.device().index)
      .record_stream(storage.data(), stream.handle());
}

}  // namespace minidl::cuda
