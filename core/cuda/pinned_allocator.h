#pragma once
// Pinned (page-locked) host memory for data-loader batches: host-to-device copies from it run
// asynchronously and at full bus speed. Blocks are cached (sizes rounded up to a power of two)
// and reused; memory goes back to the system only in empty_pinned_cache().
//
// Without CUDA, or without a GPU, the same pool hands out ordinary 64-byte aligned host memory,
// so CPU-only code paths (a DataLoader with pin_memory on a laptop) work unchanged.
//
// A pinned block that a stream reads asynchronously (a batch copied to the device) must not be
// refilled before the copy has run: call record_pinned_use(ptr, stream) after queuing the
// copy (ops/cuda/copy.cu does this). When the block is freed, the pool records an event on
// each such stream and hands the block out again only after those events have passed.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "minidl/core/cuda/stream.h"
#include "minidl/core/tensor.h"

namespace minidl::cuda {

inline constexpr size_t kMinPinnedBlockSize = 512;  // smallest block; sizes are powers of two

struct PinnedMemoryStats {
  size_t allocated_bytes = 0;         // in blocks handed out (rounded sizes)
  size_t reserved_bytes = 0;          // obtained from the system, cached or in use
  uint64_t num_host_allocations = 0;  // cudaHostAlloc (or aligned_alloc) calls
  uint64_t num_host_frees = 0;
};

// At least `nbytes` of pinned memory (aligned host memory without a GPU). The deleter returns
// the block to the pool.
std::shared_ptr<void> allocate_pinned(size_t nbytes);
// A contiguous CPU tensor whose storage comes from the pinned pool.
Tensor empty_pinned(const Shape& sizes, DType dtype = kFloat32);

// True when `ptr` points into a block of the pinned pool.
bool is_pinned(const void* ptr);
// True when the pool's memory is really page-locked (a GPU is present), not the fallback.
bool pinned_memory_is_page_locked();
// `stream` reads or writes the pinned block containing `ptr`; see the note above. Does
// nothing for pointers outside the pool.
void record_pinned_use(const void* ptr, const Stream& stream);

PinnedMemoryStats pinned_memory_stats();
// Returns cached, unused pinned blocks to the system.
void empty_pinned_cache();

}  // namespace minidl::cuda
