#pragma once
// A table in device memory that a captured CUDA graph reads and the host keeps writing: an
// optimizer's multi-tensor table (its group records change when a scheduler sets the lr;
// ops/multi_tensor_table.h) and the GradScaler's unscale table. See Note [What a captured step
// may do] in core/cuda/graph.h.
//
// The graph bakes in the table's device address, never its contents. The host keeps the bytes
// (the image); a replay hook calls upload_changes() before each replay, which copies what
// changed since the last upload to the device, on the replay's stream and outside the graph.
// Made while a step is being captured, the device memory comes from a new segment of the
// graph's private pool, so no other block of the capture shares its bytes (Note [Memory written
// between replays] in core/cuda/caching_allocator.cpp), and the hook that holds the table lives
// as long as the graph, so eager code never gets it: an eager step between replays uploads its
// own table elsewhere.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "minidl/core/device.h"
#include "minidl/core/tensor.h"

namespace minidl {

class CapturedDeviceTable {
 public:
  // A device buffer of image.size() bytes on `device`, allocated on its current stream. Nothing
  // is copied into it before the first upload_changes().
  CapturedDeviceTable(std::vector<std::byte> image, Device device);

  const void* device_data() const { return device_buffer_.data_ptr(); }
  const std::vector<std::byte>& image() const { return image_; }
  // Sets bytes [offset, offset + size) of the image to `data`; the bytes that differ are copied
  // by the next upload_changes().
  void write(size_t offset, const void* data, size_t size);
  // Copies the bytes changed since the last call (all of them, the first time) to the device,
  // in one asynchronous copy on the device's current stream through a pinned staging block;
  // nothing when nothing changed.
  void upload_changes();
  // Copies issued so far, and bytes copied (for tests and benchmarks).
  uint64_t uploads() const { return uploads_; }
  uint64_t bytes_uploaded() const { return bytes_uploaded_; }

 private:
  std::vector<std::byte> image_;
  Tensor device_buffer_;  // uint8 [image_.size()]
  // Bytes [changed_begin_, changed_end_) differ from what the device holds.
  size_t changed_begin_ = 0;
  size_t changed_end_ = 0;
  uint64_t uploads_ = 0;
  uint64_t bytes_uploaded_ = 0;
};

}  // namespace minidl
