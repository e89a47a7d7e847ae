// The process's pinned host memory pool (policy in pinned_allocator.h, run by PinnedPool in
// pinned_pool.cpp) over the system's memory.
#include "minidl/core/cuda/pinned_allocator.h"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "minidl/core/cpu_allocator.h"
#include "minidl/core/cuda/device.h"
#include "minidl/core/cuda/pinned_pool.h"
#include "minidl/core/error.h"
#include "minidl/core/logging.h"

#if MINIDL_WITH_CUDA
#include <cuda_runtime.h>

#include "minidl/core/cuda/check.h"
#endif

namespace minidl::cuda {

namespace {

// cudaHostAlloc and CUDA events with a GPU; aligned host memory, and nothing to record, without.
class SystemPinnedMemory final : public PinnedHostMemory {
 public:
  SystemPinnedMemory() : page_locked_(is_available()) {}

  bool page_locked() const override { return page_locked_; }

  void* allocate(size_t size) override {
#if MINIDL_WITH_CUDA
    if (page_locked_) {
      void* ptr = nullptr;
      // Portable: pinned for every device, so any GPU's copy stream can read it directly.
      const cudaError_t status = cudaHostAlloc(&ptr, size, cudaHostAllocPortable);
      if (status == cudaErrorMemoryAllocation) (void)cudaGetLastError();
      MINIDL_CHECK(status == cudaSuccess, "pinned allocator: cudaHostAlloc of ", size,
                   " bytes failed: ", cudaGetErrorString(status));
      return ptr;
    }
#endif
    void* ptr = std::aligned_alloc(cpu::kAlignment, size);  // size is a power of two >= 512
    MINIDL_CHECK(ptr != nullptr, "pinned allocator (host fallback): out of memory allocating ",
                 size, " bytes");
    return ptr;
  }

  void free(void* ptr) override {
#if MINIDL_WITH_CUDA
    if (page_locked_) {
      MINIDL_CUDA_CHECK(cudaFreeHost(ptr));
      return;
    }
#endif
    std::free(ptr);
  }

  std::function<bool()> record_event(const Stream& stream) override {
    auto event = std::make_shared<Event>();
    event->record(stream);
    return [event] { return event->query(); };
  }

 private:
  const bool page_locked_;
};

// Leaked on purpose: pinned batches may be freed during static destruction.
PinnedPool& pool() {
  static PinnedPool* instance = new PinnedPool(std::make_unique<SystemPinnedMemory>());
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
