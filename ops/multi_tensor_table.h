#pragma once
// Note [Multi-tensor apply]
// One operation over many tensors at once (PyTorch's _foreach ops and fused optimizers): every
// optimizer's step, and what else walks all parameters or gradients. On CUDA every tensor of
// one (device, dtype) is updated by one kernel launch; the kernel (ops/cuda/multi_tensor_apply.cuh)
// reads one table from device memory:
//
//   groups   Group[num_groups]                 the op's per-group record (lr, betas, ...)
//   tensors  TensorListEntry[num_tensors]      up to kMaxTensorLists data pointers, numel,
//                                              group, flags
//   chunks   MultiTensorChunk[num_chunks]      (tensor, first element): kMultiTensorChunkElements
//                                              each, a tensor's last chunk shorter
//
// each section at a 16-byte aligned offset given by MultiTensorLayout (passed by value). Thread
// blocks take chunks in a grid-stride loop, so any number of tensors of any sizes is one launch.
// The CPU (ops/cpu/multi_tensor_apply.h) reads the same image from host memory, tensor by tensor.
//
// The host builds the table's image each step: O(number of tensors), no device call; the chunk
// list is recomputed only when the tensors' sizes change. The image goes to the device only
// when it differs from the one last uploaded there: when the tensor set, a gradient's
// allocation, a group record (a scheduler's lr) or a tensor's flags changed. With gradients
// kept between steps (zero_grad(false)) and a constant lr, steps upload nothing; with
// set_to_none the caching allocator usually hands the same gradient blocks back. An upload is
// a copy into a pinned staging block and a cudaMemcpyAsync on the current stream (through
// Tensor::copy_), so the host never waits for the device; the pinned pool reuses the block only
// after the copy has run. The device memory comes from the caching allocator, kept while large
// enough and re-made when the current stream changes. A step being captured into a CUDA graph
// leaves this upload alone and gives the graph a table of its own (ops/captured_device_table.h,
// Note [Multi-tensor steps under CUDA graph capture] in optim/multi_tensor_optimizer.cpp).
//
// What each list of a TensorListEntry holds, and what its flags mean, each op defines (SGD:
// param, grad, momentum buffer; Adam: param, grad, step, exp_avg, exp_avg_sq, max_exp_avg_sq).
// The lists of one entry share their layout (dense, same strides), so element i is at offset i
// in each; a list of one element per tensor (a step count) is read at offset 0.
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "minidl/core/cuda/stream.h"
#include "minidl/core/dtype.h"
#include "minidl/core/tensor.h"

namespace minidl {

// Elements per chunk: 64 per thread of a 256-thread block.
inline constexpr int64_t kMultiTensorChunkElements = 16384;
// Data pointers per tensor: param, grad and up to four state tensors.
inline constexpr int kMaxTensorLists = 6;

// One tensor of the table, with its companions (gradient, state). Pointers are device pointers
// on CUDA and host pointers on the CPU.
struct TensorListEntry {
  void* data[kMaxTensorLists] = {};  // in the order the op defines; null where unused
  int64_t numel = 0;
  int32_t group = 0;  // index into the groups section
  int32_t flags = 0;  // op-defined
};

struct MultiTensorChunk {
  int64_t tensor = 0;  // index into the tensors section
  int64_t begin = 0;   // first element; the chunk ends kMultiTensorChunkElements later or at numel
};

// Where each section starts in the table, in bytes; kernels get this by value.
struct MultiTensorLayout {
  uint64_t groups_offset = 0;
  uint64_t tensors_offset = 0;
  uint64_t chunks_offset = 0;
  uint64_t bytes = 0;
  int64_t num_tensors = 0;
  int64_t num_chunks = 0;
};

// What one multi-tensor apply takes on either backend.
struct MultiTensorArgs {
  const std::byte* table = nullptr;  // the image: device memory on CUDA, host memory on the CPU
  MultiTensorLayout layout;
  DType dtype = kFloat32;  // of every tensor in the table
  int device_index = -1;   // the CUDA device (ignored on the CPU)
  // Nonzero (in the table's memory space): return at once without changing anything (a
  // GradScaler's found_inf, read on the device so the host never waits). May be null.
  const float* skip_flag = nullptr;
};

class MultiTensorTable {
 public:
  // Lays out the image for `groups` (any trivially copyable record) and `tensors` (all on one
  // device, of one dtype, none empty).
  template <class Group>
  void build(const std::vector<Group>& groups, const std::vector<TensorListEntry>& tensors) {
    static_assert(std::is_trivially_copyable_v<Group>,
                  "group records are copied to the device byte for byte");
    build(groups.data(), groups.size() * sizeof(Group), tensors);
  }
  void build(const void* groups, size_t group_bytes, const std::vector<TensorListEntry>& tensors);

  const MultiTensorLayout& layout() const { return layout_; }
  const std::vector<std::byte>& image() const { return image_; }
  const std::vector<MultiTensorChunk>& chunks() const { return chunks_; }

  // The image in device memory on `device`, valid for work on its current stream; uploads it
  // (asynchronously) only when it changed. CUDA builds only.
  const void* device_table(Device device);
  // How many uploads device_table() has issued (for tests and benchmarks).
  uint64_t uploads() const { return uploads_; }

 private:
  void rebuild_chunks(const std::vector<TensorListEntry>& tensors);

  std::vector<int64_t> chunked_numels_;  // the sizes chunks_ was computed for
  std::vector<MultiTensorChunk> chunks_;
  MultiTensorLayout layout_;
  std::vector<std::byte> image_;
  std::vector<std::byte> uploaded_image_;  // what the device holds now
  Tensor device_buffer_;                   // uint8, at least layout_.bytes long
  cuda::StreamHandle upload_stream_ = nullptr;
  uint64_t uploads_ = 0;
};

}  // namespace minidl
