// GradScaler's kernels: the fused unscale + inf/NaN check over every gradient in one launch
// (multi-tensor apply, as the optimizers' fused steps), and the single-thread scale update.
//
// The unscale table, built on the host for each launch (O(number of gradients)):
//   entries  UnscaleEntry[num_tensors]   gradient pointer and numel
//   chunks   UnscaleChunk[num_chunks]    (tensor, first element), kUnscaleChunkElements each
// entries at offset 0, chunks at a 16-byte aligned offset. Thread blocks take chunks in a
// grid-stride loop. Eagerly the table is uploaded for each launch; a launch being captured into
// a CUDA graph reads a table of the graph's own instead, uploaded by a replay hook before the
// first replay (ops/captured_device_table.h): a pinned staging block would go back to its pool
// while the graph kept reading it.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device.h"
#include "minidl/core/cuda/device_dtype.h"
#include "minidl/core/cuda/graph.h"
#include "minidl/core/cuda/pinned_allocator.h"
#include "minidl/core/cuda/stream.h"
#include "minidl/ops/captured_device_table.h"
#include "minidl/ops/cuda/loops.cuh"
#include "minidl/optim/amp_kernels.h"
#include "minidl/optim/cuda/amp_kernel.h"

namespace minidl::cuda {

namespace {

// 64 elements per thread of a 256-thread block, as ops/multi_tensor_table.h's chunks.
constexpr int64_t kUnscaleChunkElements = 16384;
constexpr size_t kSectionAlignment = 16;

struct UnscaleEntry {
  void* grad = nullptr;
  int64_t numel = 0;
};

struct UnscaleChunk {
  int64_t tensor = 0;
  int64_t begin = 0;
};

struct UnscaleLayout {
  uint64_t chunks_offset = 0;
  int64_t num_chunks = 0;
};

// ---- kernels ----

template <class T>
__global__ void amp_unscale_kernel(const std::byte* table, UnscaleLayout layout, const float* scale,
                                   float* found_inf) {
  const auto* entries = reinterpret_cast<const UnscaleEntry*>(table);
  const auto* chunks = reinterpret_cast<const UnscaleChunk*>(table + layout.chunks_offset);
  const float inv_scale = 1.0f / *scale;
  bool non_finite = false;
  for (int64_t c = blockIdx.x; c < layout.num_chunks; c += gridDim.x) {
    const UnscaleChunk chunk = chunks[c];
    const UnscaleEntry entry = entries[chunk.tensor];
    T* grad = static_cast<T*>(entry.grad);
    const int64_t end = min(chunk.begin + kUnscaleChunkElements, entry.numel);
    for (int64_t i = chunk.begin + threadIdx.x; i < end; i += blockDim.x)
      non_finite |= optim::amp_unscale_element<T>(grad, i, inv_scale);
  }
  // Every writer stores the same value, so the race is benign.
  if (non_finite) *found_inf = 1.0f;
}

__global__ void amp_update_scale_kernel(float* scale, int32_t* growth_tracker,
                                        int32_t* consecutive_skips, const float* found_inf,
                                        optim::ScaleUpdateParameters parameters,
                                        int32_t* skips_mirror) {
  optim::amp_update_scale_state(*scale, *growth_tracker, *consecutive_skips, *found_inf != 0.0f,
                                parameters);
  *skips_mirror = *consecutive_skips;
}

// ---- host helpers ----

size_t align_up(size_t value, size_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// The table image for `grads` (one dtype), and its layout.
std::vector<std::byte> table_image(const std::vector<const Tensor*>& grads, UnscaleLayout& layout) {
  std::vector<UnscaleEntry> entries;
  std::vector<UnscaleChunk> chunks;
  for (size_t t = 0; t < grads.size(); ++t) {
    entries.push_back({grads[t]->data_ptr(), grads[t]->numel()});
    for (int64_t begin = 0; begin < grads[t]->numel(); begin += kUnscaleChunkElements)
      chunks.push_back({static_cast<int64_t>(t), begin});
  }
  layout.chunks_offset = align_up(entries.size() * sizeof(UnscaleEntry), kSectionAlignment);
  layout.num_chunks = static_cast<int64_t>(chunks.size());
  // Zero-filled first, so padding bytes are deterministic.
  std::vector<std::byte> image(layout.chunks_offset + chunks.size() * sizeof(UnscaleChunk));
  std::memcpy(image.data(), entries.data(), entries.size() * sizeof(UnscaleEntry));
  std::memcpy(image.data() + layout.chunks_offset, chunks.data(),
              chunks.size() * sizeof(UnscaleChunk));
  return image;
}

// `image` in a device buffer that stays alive in the returned tensor (the caching allocator
// reuses it only after the launch on this stream).
Tensor upload_table(const std::vector<std::byte>& image, Device device) {
  const auto bytes = static_cast<int64_t>(image.size());
  // The staging block goes back to the pinned pool when `staging` dies; the pool hands it out
  // again only after the copy queued on the stream has run.
  Tensor staging = empty_pinned({bytes}, kUInt8);
  std::memcpy(staging.data_ptr(), image.data(), image.size());
  Tensor table = empty({bytes}, TensorOptions(kUInt8).device(device));
  table.copy_(staging);
  return table;
}

// ---- launchers ----

// One multi-tensor launch per gradient dtype (one for a float32 model), the inf/NaN check fused
// into the unscale. The table of gradient pointers goes to the device through pinned memory,
// asynchronously.
void amp_unscale_and_check(const std::vector<Tensor>& grads, const Tensor& scale,
                           const Tensor& found_inf) {
  const int device = scale.device().index;
  DeviceGuard device_guard(device);
  std::map<DType, std::vector<const Tensor*>> by_dtype;
  for (const Tensor& grad : grads)
    if (grad.numel() > 0) by_dtype[grad.dtype()].push_back(&grad);
  const StreamHandle stream = current_stream_handle(device);
  CudaGraph* graph = capturing_graph(current_stream(device));
  const auto* scale_data = scale.data_ptr<float>();
  float* found_inf_data = found_inf.data_ptr<float>();
  for (const auto& [dtype, group] : by_dtype) {
    UnscaleLayout layout;
    std::vector<std::byte> image = table_image(group, layout);
    Tensor eager_table;
    const void* table_address = nullptr;
    if (graph != nullptr) {
      // The gradients' addresses are the graph's for good: one upload, before the first replay.
      auto captured = std::make_shared<CapturedDeviceTable>(std::move(image), scale.device());
      graph->add_replay_hook([captured] { captured->upload_changes(); });
      table_address = captured->device_data();
    } else {
      eager_table = upload_table(image, scale.device());
      table_address = eager_table.data_ptr();
    }
    const auto* table_data = static_cast<const std::byte*>(table_address);
    const unsigned blocks = elementwise_blocks(layout.num_chunks * kThreadsPerBlock, device);
    visit_device_floating(dtype, "GradScaler unscale_ on CUDA", [&](auto zero) {
      amp_unscale_kernel<decltype(zero)>
          <<<blocks, kThreadsPerBlock, 0, stream>>>(table_data, layout, scale_data, found_inf_data);
    });
    MINIDL_LAUNCH_CHECK();
  }
}

}  // namespace

void amp_update_scale(const Tensor& scale, const Tensor& growth_tracker,
                      const Tensor& consecutive_skips, const Tensor& found_inf,
                      const optim::ScaleUpdateParameters& parameters, int32_t* skips_mirror) {
  const int device = scale.device().index;
  DeviceGuard device_guard(device);
  const StreamHandle stream = current_stream_handle(device);
  amp_update_scale_kernel<<<1, 1, 0, stream>>>(
      scale.data_ptr<float>(), growth_tracker.data_ptr<int32_t>(),
      consecutive_skips.data_ptr<int32_t>(), found_inf.data_ptr<float>(), parameters, skips_mirror);
  MINIDL_LAUNCH_CHECK();
}

std::shared_ptr<int32_t> make_host_mirror_int32(int32_t initial) {
  void* memory = nullptr;
  // Mapped and portable: with unified addressing the host pointer is valid in kernels on every
  // device.
  MINIDL_CUDA_CHECK(
      cudaHostAlloc(&memory, sizeof(int32_t), cudaHostAllocMapped | cudaHostAllocPortable));
  auto* value = static_cast<int32_t*>(memory);
  *value = initial;
  return std::shared_ptr<int32_t>(value, [](int32_t* pointer) { cudaFreeHost(pointer); });
}

}  // namespace minidl::cuda

namespace minidl::optim {

const AmpKernels AmpKernels::kCuda{
    .unscale_and_check = cuda::amp_unscale_and_check,
};

}  // namespace minidl::optim
