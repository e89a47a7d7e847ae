#pragma once
// Storage owns the bytes of one allocation; tensors are sizes, strides and an offset over it.
// Several tensors (views) may share one Storage. The version counter lives here too, so that an
// in-place change through any view is seen by autograd's saved-tensor checks.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "minidl/core/device.h"

namespace minidl {

class Storage {
 public:
  // `data` carries its own deleter (the allocator that made it).
  Storage(std::shared_ptr<void> data, size_t nbytes, Device device)
      : data_(std::move(data)), nbytes_(nbytes), device_(device) {}

  void* data() const { return data_.get(); }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  uint64_t version() const { return version_; }
  void bump_version() { ++version_; }

 private:
  std::shared_ptr<void> data_;
  size_t nbytes_;
  Device device_;
  uint64_t version_ = 0;
};

// Allocates `nbytes` on `device`: 64-byte aligned host memory for the CPU, the caching
// allocator (on the current stream) for CUDA.
std::shared_ptr<Storage> allocate_storage(size_t nbytes, Device device);

}  // namespace minidl
