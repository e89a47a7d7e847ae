#pragma once
// CUDA caching allocator (policy documented at the top of caching_allocator.cpp).
//
// Tensors get CUDA memory through CachingAllocator::allocate_shared (core/storage.cpp). All the
// policy lives in DeviceCachingAllocator, one per device, which talks to the device only
// through a DeviceMemory (core/cuda/device_memory.h), so tests drive it with a fake device.
// CUDA graphs get private pools (Note [CUDA graph private pools] in caching_allocator.cpp).
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

#include "minidl/core/cuda/device_memory.h"
#include "minidl/core/cuda/memory_by_op.h"
#include "minidl/core/cuda/stream.h"

namespace minidl {
class Storage;
}

namespace minidl::cuda {

struct MemoryStats {
  size_t allocated_bytes = 0;       // in blocks handed to tensors (rounded sizes)
  size_t reserved_bytes = 0;        // obtained from the driver, cached or in use
  size_t peak_allocated_bytes = 0;  // max of allocated_bytes since the last reset
  size_t peak_reserved_bytes = 0;
  uint64_t num_device_allocations = 0;  // cudaMalloc calls
  uint64_t num_device_frees = 0;        // cudaFree calls
};

// Sizes of the policy (the names and values of PyTorch's CUDACachingAllocator).
inline constexpr size_t kMinBlockSize = 512;        // every size is rounded up to this
inline constexpr size_t kSmallSize = 1 << 20;       // up to 1 MiB: the small pool
inline constexpr size_t kSmallBuffer = 2 << 20;     // small blocks come from 2 MiB segments
inline constexpr size_t kMinLargeAlloc = 10 << 20;  // below 10 MiB, large blocks come from...
inline constexpr size_t kLargeBuffer = 20 << 20;    // ...20 MiB segments
inline constexpr size_t kRoundLarge = 2 << 20;      // from 10 MiB: own segment, 2 MiB multiple

// Names a private memory pool of CUDA graphs (PyTorch's MempoolId_t); 0 names none. Graphs that
// capture with the same id share the pool.
using MempoolId = uint64_t;
// A new id, never handed out before in this process.
MempoolId new_mempool_id();

// One device's cache: pools of free blocks per stream, the blocks in use, the counters.
// Thread-safe: every public call takes the allocator's mutex.
class DeviceCachingAllocator {
 public:
  DeviceCachingAllocator(int device, std::unique_ptr<DeviceMemory> memory);
  // Returns cached segments to the device. Blocks still in use are not freed (their memory is
  // left to the driver's teardown) and are logged.
  ~DeviceCachingAllocator();
  DeviceCachingAllocator(const DeviceCachingAllocator&) = delete;
  DeviceCachingAllocator& operator=(const DeviceCachingAllocator&) = delete;

  // At least `nbytes` (0 gives a minimal block, so every tensor has a distinct pointer) for
  // use on `stream`. Throws minidl::Error when the device is out of memory even after the
  // cache was returned to it.
  void* allocate(size_t nbytes, StreamHandle stream);
  // Memory that the host writes before each replay of the graph being captured on `stream`,
  // and the graph reads (Note [Memory written between replays]); outside a capture, allocate().
  void* allocate_replay_input(size_t nbytes, StreamHandle stream);
  // Returns a block from allocate() to its pool (see Note [Using memory on another stream]).
  void free(void* ptr);
  // Marks the block at `ptr` as used by `stream` as well as its own: when freed, it is reused
  // only after the work queued on `stream` until then has finished.
  void record_stream(void* ptr, StreamHandle stream);
  // Returns every cached segment that is entirely free to the device. Throws while a capture
  // is registered (see Note [No driver calls that break a capture]).
  void empty_cache();
  // empty_cache() unless a capture is registered, which it then leaves alone (false): for a
  // capture about to begin beside another one on the same device.
  bool empty_cache_unless_capturing();

  // Note [CUDA graph private pools]. From now until end_allocate_to_pool(capture_id),
  // allocations on any stream that the device reports as captured by `capture_id` come from
  // the private pool `pool` (created on first use; each call adds a user), and their blocks go
  // back to it when freed.
  void begin_allocate_to_pool(MempoolId pool, uint64_t capture_id);
  void end_allocate_to_pool(uint64_t capture_id);
  // Drops one user of `pool` (a graph was reset or destroyed). Once it has no user, each of its
  // segments goes back to the device as soon as none of its blocks is in use.
  void release_pool(MempoolId pool);
  // Private pools that still hold device memory (for tests and diagnostics).
  size_t private_pool_count() const;

  MemoryStats stats() const;
  // Resets the peaks to the current bytes (and the peak's memory by op to what is in use now).
  void reset_peak_stats();
  int device() const { return device_; }

  // Note [Peak memory by op] (core/cuda/memory_by_op.h): while on, each block handed out is
  // charged to current_op_name() of the allocating thread, and each new peak of allocated bytes
  // keeps the bytes per op. Turning it on charges the blocks in use to kBeforeRecording.
  void set_recording_by_op(bool enabled);
  // The ops whose blocks made up the peak of allocated bytes while recording (since the last
  // reset_peak_stats), the most bytes first; empty if nothing was recorded.
  std::vector<OpMemory> peak_by_op() const;

  struct Block;        // a piece of a device allocation (defined in caching_allocator.cpp)
  struct PrivatePool;  // the blocks of one MempoolId (likewise)

 private:
  using BlockPool = std::set<Block*, bool (*)(const Block*, const Block*)>;

  bool capture_underway() const { return !pools_of_captures_.empty(); }
  void* allocate_locked(size_t nbytes, StreamHandle stream, bool untouched_by_capture);
  PrivatePool* private_pool_for(StreamHandle stream);
  BlockPool& pool_for(PrivatePool* private_pool, size_t size);
  BlockPool& pool_of(const Block& block);
  Block* take_best_fit(BlockPool& pool, StreamHandle stream, size_t size);
  Block* allocate_segment(size_t size, StreamHandle stream, PrivatePool* private_pool);
  void split(Block* block, size_t size);
  void return_to_pool(Block* block);
  void merge_with_neighbour(Block* block, Block* neighbour);
  void record_events_of_other_streams(Block* block);
  void do_work_deferred_by_captures();
  void process_completed_events();
  void wait_for_blocks_awaiting_events();
  void release_cached_segments();
  void free_private_pool_if_unused(MempoolId id);
  void free_segment(Block* block);
  [[noreturn]] void throw_out_of_memory(size_t nbytes, size_t rounded, size_t segment_size);
  void add_allocated(size_t bytes);
  void add_reserved(size_t bytes);

  const int device_;
  const std::unique_ptr<DeviceMemory> memory_;
  mutable std::mutex mutex_;
  BlockPool small_pool_;
  BlockPool large_pool_;
  std::unordered_map<void*, Block*> active_blocks_;  // handed out, by their pointer
  std::vector<Block*> blocks_awaiting_events_;       // freed, other streams may still use them
  // Freed during a capture while other streams had used them: their events are recorded
  // once no capture is underway (Note [No driver calls that break a capture]).
  std::vector<Block*> blocks_awaiting_end_of_capture_;
  std::map<MempoolId, std::unique_ptr<PrivatePool>> private_pools_;
  std::unordered_map<uint64_t, MempoolId> pools_of_captures_;  // capture id -> its pool
  MemoryStats stats_;
  bool recording_by_op_ = false;
  bool peak_by_op_kept_ = false;  // by_op_'s peak is the stats' peak (kept while recording)
  MemoryByOp by_op_;
};

// The process-wide allocators, one per device, created on first use and never destroyed
// (tensors may be freed during static destruction).
class CachingAllocator {
 public:
  // Memory on `device`, associated with the device's current stream. The deleter returns the
  // block to the pool for reuse by that stream.
  static std::shared_ptr<void> allocate_shared(size_t nbytes, int device);
  // Likewise through allocate_replay_input (Note [Memory written between replays]).
  static std::shared_ptr<void> allocate_replay_input_shared(size_t nbytes, int device);
  static DeviceCachingAllocator& for_device(int device);
};

MemoryStats memory_stats(int device);
void reset_peak_memory_stats(int device);
// Note [Peak memory by op]: turns recording on or off on every device (and with it op-name
// tracking, core/profiler.h), as torch.cuda.memory._record_memory_history does for snapshots.
void record_memory_by_op(bool enabled);
// The ops whose blocks made up `device`'s peak of allocated bytes while recording.
std::vector<OpMemory> peak_memory_by_op(int device);
// Returns cached, unused blocks of every device to the driver (does nothing without a GPU).
void empty_cache();
// Note [Using memory on another stream]: call after queuing work that uses `storage` on
// `stream`, when `stream` is not the stream the storage was allocated on.
void record_stream(const Storage& storage, const Stream& stream);

}  // namespace minidl::cuda
