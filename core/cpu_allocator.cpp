#include "minidl/core/cpu_allocator.h"

#include <cstdlib>
#include <new>

#include "minidl/core/error.h"

namespace minidl::cpu {

std::shared_ptr<void> allocate(size_t nbytes) {
  // aligned_alloc needs a size that is a multiple of the alignment; zero bytes still gets a
  // unique non-null pointer so empty tensors have a valid data pointer.
  const size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  void* ptr = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  MINIDL_CHECK(ptr != nullptr, "CPU allocator: out of memory allocating ", nbytes, " bytes");
  return std::shared_ptr<void>(ptr, [](void* p) { std::free(p); });
}

}  // namespace minidl::cpu
