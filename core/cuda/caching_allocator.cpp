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
//   and cudaFree calls, and, while recording, the allocated peak by op (Note [Peak memory by
//   op] in core/cuda/memory_by_op.h). Every operation holds the allocator's mutex.
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
//
// Note [CUDA graph private pools]
//   A captured CUDA graph (core/cuda/graph.h) has the address of every buffer its kernels touch
//   baked in, and each replay writes to them again, long after the host freed the tensors of
//   the captured step. So, as PyTorch's allocator does:
//   - CudaGraph::capture_begin registers its capture with begin_allocate_to_pool(pool, id).
//     While any capture is registered, allocate() asks the device (DeviceMemory::capture_status)
//     whether the block's stream is being captured and by which capture. Blocks for a
//     registered capture come from that capture's private pool: segments of its own, never
//     shared with the general pools. Freed during the capture, they return to the private pool
//     and serve later allocations of the same capture, which is correct because the captured
//     work replays in the order it was queued, exactly as eager work would have run.
//   - After end_allocate_to_pool nothing is allocated from the pool any more, unless another
//     capture shares it (the same MempoolId). Its blocks, freed or not, are never handed to
//     eager code: any replay may write to them.
//   - release_pool (the graph was reset or destroyed) drops a user. A pool without users gives
//     each of its segments back to the device as soon as the segment is entirely free, and is
//     forgotten when none is left.
//   - A stream being captured by a capture that is not registered (begun with the raw CUDA API
//     while a minidl capture is underway) is an error. While no capture is registered the
//     allocator does not ask, and serves every request from the general pools.
//   Tensors allocated before a capture and used by it (parameters, optimizer state, static
//   inputs) live in the general pools: they must outlive the graph, as in PyTorch.
//
// Note [Memory written between replays]
//   Reusing a block freed earlier in the same capture is safe for memory the graph both writes
//   and reads, not for memory the host writes before each replay (the fused SGD table and the
//   GradScaler's, ops/captured_device_table.h): the upload runs before the graph, and the
//   replay's own earlier kernels would then overwrite it with whatever the freed block held
//   (the first GPU run's replays read such garbage pointers). allocate_replay_input therefore
//   takes its block from a new segment of the private pool, whose bytes no allocation of any
//   capture has used; the rest of that segment serves later allocations as usual.
//
// Note [No driver calls that break a capture]
//   During a capture the driver refuses calls that may synchronise with, or query, work that is
//   being captured: cudaFree and cudaEventQuery among them, and an event recorded on a
//   capturing stream cannot be queried later. The refusal also invalidates the capture. So
//   while any capture is registered:
//   - free() of a block that other streams used does not record its events yet;
//   - allocate() neither processes completed events nor, when the device is full, returns
//     cached segments to it: running out of memory is an error that says a capture was
//     underway;
//   - empty_cache() throws; a private pool released meanwhile keeps its segments.
//   The first allocate() or empty_cache() after the last capture ended does the deferred work.
//   cudaMalloc is allowed (the real DeviceMemory switches to relaxed capture mode for it).
#include "minidl/core/cuda/caching_allocator.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <string>

#include "minidl/core/cuda/device.h"
#include "minidl/core/error.h"
#include "minidl/core/logging.h"
#include "minidl/core/profiler.h"
#include "minidl/core/storage.h"

namespace minidl::cuda {

namespace {
constexpr MemoryByOp::Owner kNoOwner = ~MemoryByOp::Owner{0};
}  // namespace

// A piece of a segment (one cudaMalloc). The pieces of a segment form a list in address order.
struct DeviceCachingAllocator::Block {
  void* ptr = nullptr;
  size_t size = 0;
  StreamHandle stream = nullptr;        // the stream it was allocated on and is reused by
  PrivatePool* private_pool = nullptr;  // its graph pool; null: the general pools
  bool small = false;                   // in the small pool, else the large one
  bool in_use = false;
  // In use: whom Note [Peak memory by op] charges it to (kNoOwner: nobody, recording was off).
  MemoryByOp::Owner owner = kNoOwner;
  Block* prev = nullptr;  // neighbours within the segment
  Block* next = nullptr;
  std::vector<StreamHandle> other_streams;  // record_stream calls since the allocation
  std::vector<EventHandle> pending_events;  // after free: wait for these before reuse

  bool whole_segment() const { return prev == nullptr && next == nullptr; }
  // Free and in a pool: not waiting for other streams, neither for their events nor, when it
  // was freed during a capture, for the end of the capture (then other_streams is not empty).
  bool cached() const { return !in_use && other_streams.empty() && pending_events.empty(); }
};

// The blocks of one MempoolId (Note [CUDA graph private pools]).
struct DeviceCachingAllocator::PrivatePool {
  PrivatePool(MempoolId pool_id, bool (*less)(const Block*, const Block*))
      : id(pool_id), small_blocks(less), large_blocks(less) {}
  MempoolId id;
  BlockPool small_blocks;
  BlockPool large_blocks;
  int users = 0;          // graphs capturing into it or holding a capture made with it
  size_t blocks_out = 0;  // handed out and not back in small_blocks or large_blocks yet
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
    pools_of_captures_.clear();  // nothing can be captured any more
    for (Block* block : blocks_awaiting_events_) {
      for (EventHandle event : block->pending_events) memory_->release_event(event);
      block->pending_events.clear();
    }
    std::vector<Block*> freed = std::move(blocks_awaiting_events_);
    freed.insert(freed.end(), blocks_awaiting_end_of_capture_.begin(),
                 blocks_awaiting_end_of_capture_.end());
    blocks_awaiting_events_.clear();
    blocks_awaiting_end_of_capture_.clear();
    for (Block* block : freed) {
      block->other_streams.clear();
      return_to_pool(block);
    }
    release_cached_segments();
    // Every private pool goes too, used or not: no graph can be replayed without its allocator.
    for (auto& [id, pool] : private_pools_) {
      pool->users = 0;
      for (BlockPool* blocks : {&pool->small_blocks, &pool->large_blocks}) {
        for (auto it = blocks->begin(); it != blocks->end();) {
          Block* block = *it;
          it = blocks->erase(it);
          if (block->whole_segment()) {
            free_segment(block);
          } else {
            delete block;  // a piece of a segment still in use: left to the driver's teardown
          }
        }
      }
    }
    if (!active_blocks_.empty())
      logger().warn("CUDA caching allocator of device {}: destroyed with {} blocks ({}) in use",
                    device_, active_blocks_.size(), format_bytes(stats_.allocated_bytes));
    // Delete the bookkeeping of what is left (pieces of segments still in use).
    std::vector<Block*> left;
    for (auto& [ptr, block] : active_blocks_) left.push_back(block);
    left.insert(left.end(), small_pool_.begin(), small_pool_.end());
    left.insert(left.end(), large_pool_.begin(), large_pool_.end());
    for (Block* block : left) delete block;
    private_pools_.clear();
  } catch (const std::exception& error) {
    logger().error("CUDA caching allocator of device {}: {}", device_, error.what());
  }
}

void* DeviceCachingAllocator::allocate(size_t nbytes, StreamHandle stream) {
  std::lock_guard lock(mutex_);
  return allocate_locked(nbytes, stream, /*untouched_by_capture=*/false);
}

void* DeviceCachingAllocator::allocate_replay_input(size_t nbytes, StreamHandle stream) {
  std::lock_guard lock(mutex_);
  return allocate_locked(nbytes, stream, /*untouched_by_capture=*/true);
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
  if (block->owner != kNoOwner) {
    by_op_.remove(block->owner, block->size);
    block->owner = kNoOwner;
  }
  if (block->other_streams.empty()) {
    return_to_pool(block);
  } else if (capture_underway()) {
    blocks_awaiting_end_of_capture_.push_back(block);
  } else {
    record_events_of_other_streams(block);
  }
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
  MINIDL_CHECK(empty_cache_unless_capturing(), "empty_cache: a CUDA graph is being captured on ",
               "device ", device_, ", and memory cannot go back to the driver (cudaFree) during a ",
               "capture; call empty_cache() before capture_begin() or after capture_end()");
}

bool DeviceCachingAllocator::empty_cache_unless_capturing() {
  std::lock_guard lock(mutex_);
  if (capture_underway()) return false;
  do_work_deferred_by_captures();
  release_cached_segments();
  return true;
}

void DeviceCachingAllocator::begin_allocate_to_pool(MempoolId pool, uint64_t capture_id) {
  std::lock_guard lock(mutex_);
  MINIDL_INTERNAL_ASSERT(pool != 0, "a private pool needs an id from new_mempool_id()");
  MINIDL_INTERNAL_ASSERT(pools_of_captures_.count(capture_id) == 0, "capture ", capture_id,
                         " is already registered with the allocator of device ", device_);
  std::unique_ptr<PrivatePool>& entry = private_pools_[pool];
  if (!entry) entry = std::make_unique<PrivatePool>(pool, block_less);
  ++entry->users;
  pools_of_captures_.emplace(capture_id, pool);
}

void DeviceCachingAllocator::end_allocate_to_pool(uint64_t capture_id) {
  std::lock_guard lock(mutex_);
  const bool erased = pools_of_captures_.erase(capture_id) == 1;
  MINIDL_INTERNAL_ASSERT(erased, "capture ", capture_id, " was never registered with the ",
                         "allocator of device ", device_);
}

void DeviceCachingAllocator::release_pool(MempoolId pool) {
  std::lock_guard lock(mutex_);
  const auto found = private_pools_.find(pool);
  MINIDL_INTERNAL_ASSERT(found != private_pools_.end() && found->second->users > 0,
                         "release_pool: private pool ", pool, " of device ", device_,
                         " has no user to release");
  --found->second->users;
  free_private_pool_if_unused(pool);
}

size_t DeviceCachingAllocator::private_pool_count() const {
  std::lock_guard lock(mutex_);
  return private_pools_.size();
}

MemoryStats DeviceCachingAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void DeviceCachingAllocator::reset_peak_stats() {
  std::lock_guard lock(mutex_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
  stats_.peak_reserved_bytes = stats_.reserved_bytes;
  peak_by_op_kept_ = recording_by_op_;
  if (recording_by_op_) by_op_.keep_as_peak();
}

void DeviceCachingAllocator::set_recording_by_op(bool enabled) {
  std::lock_guard lock(mutex_);
  if (enabled && !recording_by_op_) {
    for (const auto& [ptr, block] : active_blocks_) {
      if (block->owner != kNoOwner) continue;
      block->owner = by_op_.owner_of(kBeforeRecording);
      by_op_.add(block->owner, block->size);
    }
    // What made up the peak so far is unknown: only a new peak, or a reset, is kept.
    peak_by_op_kept_ = false;
  }
  recording_by_op_ = enabled;
}

std::vector<OpMemory> DeviceCachingAllocator::peak_by_op() const {
  std::lock_guard lock(mutex_);
  return peak_by_op_kept_ ? by_op_.at_peak() : std::vector<OpMemory>{};
}

// ---- private; the mutex is held ----

// `untouched_by_capture`: see Note [Memory written between replays].
void* DeviceCachingAllocator::allocate_locked(size_t nbytes, StreamHandle stream,
                                              bool untouched_by_capture) {
  PrivatePool* private_pool = nullptr;
  if (capture_underway())
    private_pool = private_pool_for(stream);
  else
    do_work_deferred_by_captures();
  const size_t size = round_size(nbytes);
  const bool fresh_segment = untouched_by_capture && private_pool != nullptr;
  Block* block =
      fresh_segment ? nullptr : take_best_fit(pool_for(private_pool, size), stream, size);
  if (block == nullptr) block = allocate_segment(size, stream, private_pool);
  if (block == nullptr) throw_out_of_memory(nbytes, size, segment_size(size));
  if (worth_splitting(*block, size)) split(block, size);
  block->in_use = true;
  if (private_pool != nullptr) ++private_pool->blocks_out;
  active_blocks_.emplace(block->ptr, block);
  if (recording_by_op_) {
    block->owner = by_op_.owner_of(current_op_name());
    by_op_.add(block->owner, block->size);
  }
  add_allocated(block->size);
  return block->ptr;
}

DeviceCachingAllocator::PrivatePool* DeviceCachingAllocator::private_pool_for(StreamHandle stream) {
  const DeviceMemory::CaptureStatus status = memory_->capture_status(stream);
  if (!status.capturing) return nullptr;
  const auto found = pools_of_captures_.find(status.capture_id);
  MINIDL_CHECK(found != pools_of_captures_.end(), "CUDA allocation on device ", device_,
               ": the stream is being captured into a CUDA graph (capture id ", status.capture_id,
               ") that minidl did not start, so its memory has no private ",
               "pool; capture with cuda::CudaGraph or cuda::GraphCapture (core/cuda/graph.h)");
  return private_pools_.at(found->second).get();
}

DeviceCachingAllocator::BlockPool& DeviceCachingAllocator::pool_for(PrivatePool* private_pool,
                                                                    size_t size) {
  const bool small = size <= kSmallSize;
  if (private_pool != nullptr)
    return small ? private_pool->small_blocks : private_pool->large_blocks;
  return small ? small_pool_ : large_pool_;
}

DeviceCachingAllocator::BlockPool& DeviceCachingAllocator::pool_of(const Block& block) {
  if (block.private_pool != nullptr)
    return block.small ? block.private_pool->small_blocks : block.private_pool->large_blocks;
  return block.small ? small_pool_ : large_pool_;
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
                                                                        StreamHandle stream,
                                                                        PrivatePool* private_pool) {
  const size_t bytes = segment_size(size);
  void* ptr = memory_->allocate(bytes);
  if (ptr == nullptr) {
    // The device is full. No segment can go back during a capture (Note [No driver calls that
    // break a capture]); otherwise give back what the cache holds and try once more.
    if (capture_underway()) return nullptr;
    wait_for_blocks_awaiting_events();
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
  block->private_pool = private_pool;
  block->small = size <= kSmallSize;
  return block;
}

// Cuts `block` down to `size` and puts the rest, as a new free block, into the pool.
void DeviceCachingAllocator::split(Block* block, size_t size) {
  auto* rest = new Block;
  rest->ptr = static_cast<char*>(block->ptr) + size;
  rest->size = block->size - size;
  rest->stream = block->stream;
  rest->private_pool = block->private_pool;
  rest->small = block->small;
  rest->prev = block;
  rest->next = block->next;
  if (block->next != nullptr) block->next->prev = rest;
  block->next = rest;
  block->size = size;
  pool_of(*block).insert(rest);
}

void DeviceCachingAllocator::return_to_pool(Block* block) {
  PrivatePool* private_pool = block->private_pool;
  if (block->prev != nullptr && block->prev->cached()) {
    Block* prev = block->prev;
    merge_with_neighbour(prev, block);  // prev absorbs block
    block = prev;
  }
  if (block->next != nullptr && block->next->cached()) merge_with_neighbour(block, block->next);
  pool_of(*block).insert(block);
  if (private_pool != nullptr) {
    --private_pool->blocks_out;
    free_private_pool_if_unused(private_pool->id);  // the pool may be gone after this
  }
}

// `first` absorbs `second`, its next neighbour; whichever of the two sat in the pool leaves it.
void DeviceCachingAllocator::merge_with_neighbour(Block* first, Block* second) {
  BlockPool& pool = pool_of(*first);
  pool.erase(first);  // keyed by size, which changes
  pool.erase(second);
  first->size += second->size;
  first->next = second->next;
  if (second->next != nullptr) second->next->prev = first;
  delete second;
}

void DeviceCachingAllocator::record_events_of_other_streams(Block* block) {
  for (StreamHandle other : block->other_streams)
    block->pending_events.push_back(memory_->record_event(other));
  block->other_streams.clear();
  blocks_awaiting_events_.push_back(block);
}

void DeviceCachingAllocator::do_work_deferred_by_captures() {
  if (!blocks_awaiting_end_of_capture_.empty()) {
    std::vector<Block*> blocks = std::move(blocks_awaiting_end_of_capture_);
    blocks_awaiting_end_of_capture_.clear();
    for (Block* block : blocks) record_events_of_other_streams(block);
  }
  process_completed_events();
  std::vector<MempoolId> released;
  for (const auto& [id, pool] : private_pools_)
    if (pool->users == 0) released.push_back(id);
  for (MempoolId id : released) free_private_pool_if_unused(id);
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

// Before declaring the device full, as PyTorch's allocator does: blocks that other streams were
// still using when freed become free once those streams pass their events, so wait for that
// (a host synchronisation, on the way to an out-of-memory error only) and return them.
void DeviceCachingAllocator::wait_for_blocks_awaiting_events() {
  for (Block* block : blocks_awaiting_events_) {
    for (EventHandle event : block->pending_events) {
      memory_->synchronize_event(event);
      memory_->release_event(event);
    }
    block->pending_events.clear();
    return_to_pool(block);
  }
  blocks_awaiting_events_.clear();
}

// The general pools only: a private pool's segments belong to its graphs.
void DeviceCachingAllocator::release_cached_segments() {
  for (BlockPool* pool : {&small_pool_, &large_pool_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* block = *it;
      if (!block->whole_segment()) {
        ++it;
        continue;
      }
      it = pool->erase(it);
      free_segment(block);
    }
  }
}

// Once private pool `id` has no user, returns its entirely free segments to the device, and
// forgets the pool when nothing of it is left; not while a capture is underway (then the next
// do_work_deferred_by_captures() does it).
void DeviceCachingAllocator::free_private_pool_if_unused(MempoolId id) {
  const auto found = private_pools_.find(id);
  if (found == private_pools_.end()) return;
  PrivatePool& pool = *found->second;
  if (pool.users > 0 || capture_underway()) return;
  for (BlockPool* blocks : {&pool.small_blocks, &pool.large_blocks}) {
    for (auto it = blocks->begin(); it != blocks->end();) {
      Block* block = *it;
      if (!block->whole_segment()) {
        ++it;  // a neighbour is still in use
        continue;
      }
      it = blocks->erase(it);
      free_segment(block);
    }
  }
  if (pool.blocks_out == 0) {
    MINIDL_INTERNAL_ASSERT(pool.small_blocks.empty() && pool.large_blocks.empty(), "private pool ",
                           id, " of device ", device_, " holds a split block while none is in use");
    private_pools_.erase(found);
  }
}

// Returns the whole free segment `block` to the device and deletes its bookkeeping; the caller
// has taken it out of its pool.
void DeviceCachingAllocator::free_segment(Block* block) {
  memory_->free(block->ptr);
  ++stats_.num_device_frees;
  stats_.reserved_bytes -= block->size;
  delete block;
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
             capture_underway()
                 ? ". A CUDA graph was being captured, so cached memory could not go back to the "
                   "driver first: call cuda::empty_cache() before capturing, or use a smaller "
                   "batch size."
                 : ". Free tensors that are no longer needed or use a smaller batch size."));
}

void DeviceCachingAllocator::add_allocated(size_t bytes) {
  stats_.allocated_bytes += bytes;
  if (stats_.allocated_bytes <= stats_.peak_allocated_bytes) return;
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
  peak_by_op_kept_ = recording_by_op_;
  if (recording_by_op_) by_op_.keep_as_peak();
}

void DeviceCachingAllocator::add_reserved(size_t bytes) {
  stats_.reserved_bytes += bytes;
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
}

// ---- the process-wide allocators ----

MempoolId new_mempool_id() {
  static std::atomic<MempoolId> next{1};
  return next.fetch_add(1);
}

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

namespace {

// `ptr`, from `allocator`, as a shared_ptr whose deleter returns it there.
std::shared_ptr<void> owned_by(DeviceCachingAllocator& allocator, void* ptr) {
  return std::shared_ptr<void>(ptr, [&allocator](void* p) {
    try {
      allocator.free(p);
    } catch (const std::exception& error) {  // a deleter must not throw
      logger().error("CUDA caching allocator: free failed: {}", error.what());
    }
  });
}

}  // namespace

std::shared_ptr<void> CachingAllocator::allocate_shared(size_t nbytes, int device) {
  require_available("CUDA allocation");
  DeviceCachingAllocator& allocator = for_device(device);
  return owned_by(allocator, allocator.allocate(nbytes, current_stream_handle(device)));
}

std::shared_ptr<void> CachingAllocator::allocate_replay_input_shared(size_t nbytes, int device) {
  require_available("CUDA allocation");
  DeviceCachingAllocator& allocator = for_device(device);
  return owned_by(allocator,
                  allocator.allocate_replay_input(nbytes, current_stream_handle(device)));
}

MemoryStats memory_stats(int device) { return CachingAllocator::for_device(device).stats(); }

void reset_peak_memory_stats(int device) {
  CachingAllocator::for_device(device).reset_peak_stats();
}

void record_memory_by_op(bool enabled) {
  set_op_name_tracking(enabled);
  for (int d = 0; d < device_count(); ++d)
    CachingAllocator::for_device(d).set_recording_by_op(enabled);
}

std::vector<OpMemory> peak_memory_by_op(int device) {
  return CachingAllocator::for_device(device).peak_by_op();
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
