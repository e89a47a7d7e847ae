// The CUDA kernel of gather_rows: a grid-stride loop over the words of the output, each word
// copied from its row of the source. Rows move as 4-byte words when their size and both base
// pointers allow it (MNIST's 784-byte and CIFAR's 3072-byte images, int64 labels), else bytes.
#include <cuda_runtime.h>

#include <cstdint>

#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device.h"
#include "minidl/core/cuda/launch.cuh"
#include "minidl/core/cuda/launch_geometry.h"
#include "minidl/core/cuda/stream.h"
#include "minidl/data/loader/gather_rows_kernels.h"

namespace minidl::cuda {

namespace {

constexpr int64_t kMaxBlocks = 65536;  // the grid-stride loop covers the rest

// out [count, row_words] = source [., row_words] at rows[j].
template <class Word>
__global__ void gather_rows_cuda(Word* out, const Word* source, const int64_t* rows, int64_t count,
                                 int64_t row_words) {
  const int64_t total = count * row_words;
  for (const int64_t i : grid_stride_range(total)) {
    const int64_t j = i / row_words, word = i % row_words;
    out[i] = source[rows[j] * row_words + word];
  }
}

template <class Word>
void launch(const Tensor& out, const Tensor& source, const Tensor& rows, int64_t row_bytes,
            StreamHandle stream) {
  const int64_t count = rows.numel();
  const int64_t row_words = row_bytes / static_cast<int64_t>(sizeof(Word));
  gather_rows_cuda<Word>
      <<<grid_stride_blocks(count * row_words, kThreadsPerBlock, kMaxBlocks), kThreadsPerBlock, 0,
         stream>>>(static_cast<Word*>(out.data_ptr()), static_cast<const Word*>(source.data_ptr()),
                   rows.data_ptr<int64_t>(), count, row_words);
  MINIDL_LAUNCH_CHECK();
}

void gather_rows_kernel(const Tensor& out, const Tensor& source, const Tensor& rows) {
  const int64_t count = rows.numel();
  if (count == 0 || source.size(0) == 0) return;  // no rows can be valid in an empty source
  const auto row_bytes = static_cast<int64_t>(source.nbytes()) / source.size(0);
  if (row_bytes == 0) return;
  const int device = out.device().index;
  DeviceGuard device_guard(device);
  const StreamHandle stream = current_stream_handle(device);
  const bool word_aligned = row_bytes % 4 == 0 &&
                            reinterpret_cast<uintptr_t>(out.data_ptr()) % 4 == 0 &&
                            reinterpret_cast<uintptr_t>(source.data_ptr()) % 4 == 0;
  if (word_aligned)
    launch<uint32_t>(out, source, rows, row_bytes, stream);
  else
    launch<uint8_t>(out, source, rows, row_bytes, stream);
}

}  // namespace

}  // namespace minidl::cuda

namespace minidl::data {

const GatherRowsKernels GatherRowsKernels::kCuda{
    .gather_rows = cuda::gather_rows_kernel,
};

}  // namespace minidl::data
