#pragma once
// CUDA caching allocator (policy documented in caching_allocator.cpp).
#include <cstddef>
#include <cstdint>
#include <memory>

namespace minidl::cuda {

struct MemoryStats {
  size_t allocated_bytes = 0;       // in blocks handed to tensors
  size_t reserved_bytes = 0;        // obtained from the driver, cached or in use
  size_t peak_allocated_bytes = 0;  // max of allocated_bytes since the last reset
  size_t peak_reserved_bytes = 0;
  uint64_t num_device_allocations = 0;  // cudaMalloc calls
  uint64_t num_device_frees = 0;        // cudaFree calls
};

class CachingAllocator {
 public:
  // Memory on `device`, associated with the device's current stream. The deleter returns the
  // block to the pool for reuse by that stream.
  static std::shared_ptr<void> allocate_shared(size_t nbytes, int device);
};

MemoryStats memory_stats(int device);
void reset_peak_memory_stats(int device);
// Returns cached, unused blocks of every device to the driver.
void empty_cache();

}  // namespace minidl::cuda
