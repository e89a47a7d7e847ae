#include "minidl/core/storage.h"

#include "minidl/core/cpu_allocator.h"
#include "minidl/core/cuda/caching_allocator.h"

namespace minidl {

std::shared_ptr<Storage> allocate_storage(size_t nbytes, Device device) {
  std::shared_ptr<void> data = device.is_cpu()
                                   ? cpu::allocate(nbytes)
                                   : cuda::CachingAllocator::allocate_shared(nbytes, device.index);
  return std::make_shared<Storage>(std::move(data), nbytes, device);
}

}  // namespace minidl
