// A device table refreshed before each replay (see ops/captured_device_table.h).
#include "minidl/ops/captured_device_table.h"

#include <algorithm>
#include <cstring>

#include "minidl/core/cuda/caching_allocator.h"
#include "minidl/core/cuda/pinned_allocator.h"
#include "minidl/core/error.h"
#include "minidl/core/from_blob.h"

namespace minidl {

namespace {

// The table's device memory. The host writes it before each replay and the graph reads it, so
// during a capture it must not share bytes with any other block of the capture (Note [Memory
// written between replays] in core/cuda/caching_allocator.cpp). A CPU table (tests) is a plain
// host tensor.
Tensor table_buffer(size_t nbytes, Device device) {
  const auto length = static_cast<int64_t>(nbytes);
  const TensorOptions options = TensorOptions(kUInt8).device(device);
  if (!device.is_cuda()) return empty({length}, options);
  std::shared_ptr<void> memory =
      cuda::CachingAllocator::allocate_replay_input_shared(nbytes, device.index);
  void* data = memory.get();
  return from_blob(
      data, {length}, [memory = std::move(memory)](void*) {}, options);
}

}  // namespace

CapturedDeviceTable::CapturedDeviceTable(std::vector<std::byte> image, Device device)
    : image_(std::move(image)),
      device_buffer_(table_buffer(image_.size(), device)),
      changed_end_(image_.size()) {}

void CapturedDeviceTable::write(size_t offset, const void* data, size_t size) {
  MINIDL_INTERNAL_ASSERT(offset + size <= image_.size(), "CapturedDeviceTable: writing bytes [",
                         offset, ", ", offset + size, ") of a ", image_.size(), "-byte table");
  const auto* bytes = static_cast<const std::byte*>(data);
  // Only the span that really differs is marked: a scheduler that left the lr alone costs no
  // copy at the next replay.
  size_t first = 0;
  while (first < size && image_[offset + first] == bytes[first]) ++first;
  if (first == size) return;
  size_t last = size;
  while (image_[offset + last - 1] == bytes[last - 1]) --last;
  std::memcpy(image_.data() + offset + first, bytes + first, last - first);
  const size_t begin = offset + first, end = offset + last;
  if (changed_begin_ == changed_end_) {
    changed_begin_ = begin;
    changed_end_ = end;
  } else {
    changed_begin_ = std::min(changed_begin_, begin);
    changed_end_ = std::max(changed_end_, end);
  }
}

void CapturedDeviceTable::upload_changes() {
  if (changed_begin_ == changed_end_) return;
  const auto begin = static_cast<int64_t>(changed_begin_);
  const auto length = static_cast<int64_t>(changed_end_ - changed_begin_);
  // Pinned, so the copy is truly asynchronous; the pinned pool hands the block out again only
  // after the copy has run. A CPU table (tests) takes a plain host tensor.
  Tensor staging = device_buffer_.is_cuda() ? cuda::empty_pinned({length}, kUInt8)
                                            : empty({length}, TensorOptions(kUInt8));
  std::memcpy(staging.data_ptr(), image_.data() + changed_begin_, static_cast<size_t>(length));
  device_buffer_.narrow(0, begin, length).copy_(staging);
  changed_begin_ = changed_end_ = 0;
  ++uploads_;
  bytes_uploaded_ += static_cast<uint64_t>(length);
}

}  // namespace minidl
