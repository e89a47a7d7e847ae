#pragma once
// Note [Fused SGD table]
// On CUDA, SGD updates every parameter of one (device, dtype) in one kernel launch (multi-tensor
// apply). The kernel (optim/cuda/sgd_kernel.cu) reads one table from device memory:
//
//   groups   SgdGroupParameters[num_groups]   lr, momentum, ... of each param group
//   tensors  SgdTensorEntry[num_tensors]      param, grad and buffer pointers, numel, group
//   chunks   SgdChunk[num_chunks]             (tensor, first element): kSgdChunkElements each,
//                                             a tensor's last chunk shorter
//
// each section at a 16-byte aligned offset given by FusedSgdLayout (passed by value). Thread
// blocks take chunks in a grid-stride loop, so any number of tensors of any sizes is one launch.
//
// The host builds the table's image each step: O(number of tensors), no device call; the chunk
// list is recomputed only when the tensors' sizes change. The image goes to the device only
// when it differs from the one last uploaded there: when the parameter set, a gradient's
// allocation, a hyper-parameter (a scheduler's lr) or a buffer's first-step flag changed. With
// gradients kept between steps (zero_grad(false)) and a constant lr, steps upload nothing; with
// set_to_none the caching allocator usually hands the same gradient blocks back. An upload is
// a copy into a pinned staging block and a cudaMemcpyAsync on the current stream (through
// Tensor::copy_), so the host never waits for the device; the pinned pool reuses the block only
// after the copy has run. The device memory comes from the caching allocator, kept while large
// enough and re-made when the current stream changes. A step being captured into a CUDA graph
// leaves this upload alone and gives the graph a table of its own (Note [Fused SGD under CUDA
// graph capture] in optim/sgd.cpp).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "minidl/core/cuda/stream.h"
#include "minidl/core/tensor.h"
#include "minidl/optim/sgd_math.h"

namespace minidl::optim {

// Elements per chunk: 64 per thread of a 256-thread block.
inline constexpr int64_t kSgdChunkElements = 16384;

// One parameter in the table. Pointers are device pointers; param, grad and buffer share their
// layout (dense, same strides), so element i is at offset i in all three.
struct SgdTensorEntry {
  void* param = nullptr;
  const void* grad = nullptr;
  void* momentum_buffer = nullptr;  // null when buffer_state is kNone
  int64_t numel = 0;
  int32_t group = 0;  // index into the groups section
  MomentumBufferState buffer_state = MomentumBufferState::kNone;
};

struct SgdChunk {
  int64_t tensor = 0;  // index into the tensors section
  int64_t begin = 0;   // first element; the chunk ends kSgdChunkElements later or at numel
};

// Where each section starts in the table, in bytes; the kernel gets this by value.
struct FusedSgdLayout {
  uint64_t groups_offset = 0;
  uint64_t tensors_offset = 0;
  uint64_t chunks_offset = 0;
  uint64_t bytes = 0;
  int64_t num_chunks = 0;
};

class FusedSgdTable {
 public:
  // Lays out the image for `tensors` (all on one device, one dtype, none empty).
  void build(const std::vector<SgdGroupParameters>& groups,
             const std::vector<SgdTensorEntry>& tensors);
  const FusedSgdLayout& layout() const { return layout_; }
  const std::vector<std::byte>& image() const { return image_; }
  const std::vector<SgdChunk>& chunks() const { return chunks_; }

  // The image in device memory on `device`, valid for work on its current stream; uploads it
  // (asynchronously) only when it changed. CUDA builds only.
  const void* device_table(Device device);
  // How many uploads device_table() has issued (for tests and benchmarks).
  uint64_t uploads() const { return uploads_; }

 private:
  void rebuild_chunks(const std::vector<SgdTensorEntry>& tensors);

  std::vector<int64_t> chunked_numels_;  // the sizes chunks_ was computed for
  std::vector<SgdChunk> chunks_;
  FusedSgdLayout layout_;
  std::vector<std::byte> image_;
  std::vector<std::byte> uploaded_image_;  // what the device holds now
  Tensor device_buffer_;                   // uint8, at least layout_.bytes long
  cuda::StreamHandle upload_stream_ = nullptr;
  uint64_t uploads_ = 0;
};

}  // namespace minidl::optim
