// The multi-tensor table: layout and upload (Note [Multi-tensor apply] in multi_tensor_table.h).
#include "minidl/ops/multi_tensor_table.h"

#include <cstring>
#include <type_traits>

#include "minidl/core/cuda/pinned_allocator.h"
#include "minidl/core/cuda/stream.h"
#include "minidl/core/error.h"

namespace minidl {

namespace {

constexpr uint64_t kSectionAlignment = 16;
// Device buffers grow in steps of this, so a slightly larger table does not re-allocate.
constexpr int64_t kDeviceBufferGranularity = 4096;

static_assert(std::is_trivially_copyable_v<TensorListEntry> &&
                  std::is_trivially_copyable_v<MultiTensorChunk>,
              "the table is copied to the device byte for byte");

uint64_t align_up(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

void copy_section(std::vector<std::byte>& image, uint64_t offset, const void* data, size_t bytes) {
  if (bytes > 0) std::memcpy(image.data() + offset, data, bytes);
}

}  // namespace

void MultiTensorTable::rebuild_chunks(const std::vector<TensorListEntry>& tensors) {
  chunked_numels_.clear();
  chunks_.clear();
  for (size_t t = 0; t < tensors.size(); ++t) {
    chunked_numels_.push_back(tensors[t].numel);
    for (int64_t begin = 0; begin < tensors[t].numel; begin += kMultiTensorChunkElements)
      chunks_.push_back({static_cast<int64_t>(t), begin});
  }
}

void MultiTensorTable::build(const void* groups, size_t group_bytes,
                             const std::vector<TensorListEntry>& tensors) {
  bool same_sizes = chunked_numels_.size() == tensors.size();
  for (size_t t = 0; same_sizes && t < tensors.size(); ++t)
    same_sizes = chunked_numels_[t] == tensors[t].numel;
  if (!same_sizes) rebuild_chunks(tensors);

  layout_.groups_offset = 0;
  layout_.tensors_offset = align_up(group_bytes, kSectionAlignment);
  layout_.chunks_offset = align_up(
      layout_.tensors_offset + tensors.size() * sizeof(TensorListEntry), kSectionAlignment);
  layout_.bytes = layout_.chunks_offset + chunks_.size() * sizeof(MultiTensorChunk);
  layout_.num_tensors = static_cast<int64_t>(tensors.size());
  layout_.num_chunks = static_cast<int64_t>(chunks_.size());

  // Zero first, so padding bytes are deterministic and the comparison with the last upload
  // sees only real changes.
  image_.assign(layout_.bytes, std::byte{0});
  copy_section(image_, layout_.groups_offset, groups, group_bytes);
  copy_section(image_, layout_.tensors_offset, tensors.data(),
               tensors.size() * sizeof(TensorListEntry));
  copy_section(image_, layout_.chunks_offset, chunks_.data(),
               chunks_.size() * sizeof(MultiTensorChunk));
}

const void* MultiTensorTable::device_table(Device device) {
  MINIDL_INTERNAL_ASSERT(device.is_cuda(), "a multi-tensor device table lives on a CUDA device");
  const cuda::StreamHandle stream = cuda::current_stream_handle(device.index);
  const auto needed = static_cast<int64_t>(layout_.bytes);
  const bool fresh_buffer = !device_buffer_.defined() || device_buffer_.numel() < needed ||
                            device_buffer_.device() != device || upload_stream_ != stream;
  if (fresh_buffer) {
    // Allocated on the current stream (the caching allocator ties blocks to it).
    const int64_t rounded = (needed + kDeviceBufferGranularity - 1) / kDeviceBufferGranularity *
                            kDeviceBufferGranularity;
    device_buffer_ = empty({rounded}, TensorOptions(kUInt8).device(device));
    upload_stream_ = stream;
    uploaded_image_.clear();
  }
  if (fresh_buffer || uploaded_image_ != image_) {
    // The staging block returns to the pinned pool when `staging` goes out of scope; the pool
    // hands it out again only after the copy queued on the stream has run.
    Tensor staging = cuda::empty_pinned({needed}, kUInt8);
    std::memcpy(staging.data_ptr(), image_.data(), image_.size());
    device_buffer_.narrow(0, 0, needed).copy_(staging);
    uploaded_image_ = image_;
    ++uploads_;
  }
  return device_buffer_.data_ptr();
}

}  // namespace minidl
