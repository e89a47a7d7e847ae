#pragma once
// What every CUDA launcher does before its launch (include from .cu files only): make the
// tensors' device current, find its current stream, and size a grid-stride grid to the number
// of multiprocessors. Written once, so a fix (a cache, a device check) lands in every launcher.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device.h"
#include "minidl/core/cuda/launch_geometry.h"
#include "minidl/core/cuda/stream.h"
#include "minidl/core/tensor.h"

namespace minidl::cuda {

// Multiprocessors of `device`, asked of the runtime once per device: launchers call this on
// every launch, and the attribute query is not free.
inline int multiprocessor_count(int device) {
  static const std::vector<int> counts = [] {
    int device_count = 0;
    MINIDL_CUDA_CHECK(cudaGetDeviceCount(&device_count));
    std::vector<int> result(static_cast<size_t>(device_count));
    for (int d = 0; d < device_count; ++d)
      MINIDL_CUDA_CHECK(cudaDeviceGetAttribute(&result[d], cudaDevAttrMultiProcessorCount, d));
    return result;
  }();
  MINIDL_INTERNAL_ASSERT(device >= 0 && device < static_cast<int>(counts.size()), "no CUDA device ",
                         device);
  return counts[device];
}

// Blocks for a grid-stride loop over `numel` elements: enough to keep
// `blocks_per_multiprocessor` blocks resident on each multiprocessor of `device`, fewer when
// the work needs fewer.
inline unsigned resident_grid_stride_blocks(int64_t numel, int64_t threads_per_block,
                                            int64_t blocks_per_multiprocessor, int device) {
  return grid_stride_blocks(numel, threads_per_block,
                            blocks_per_multiprocessor * multiprocessor_count(device));
}

// Blocks of kThreadsPerBlock for an element-wise grid-stride loop over `numel` elements on
// `device`, kBlocksPerMultiprocessor resident per multiprocessor.
inline unsigned elementwise_blocks(int64_t numel, int device) {
  return resident_grid_stride_blocks(numel, kThreadsPerBlock, kBlocksPerMultiprocessor, device);
}

// The indices of [0, count) that the calling thread visits in a 1-D grid-stride loop (its global
// thread index, then steps of every thread of the grid), as a range:
//   for (const int64_t i : grid_stride_range(numel)) out[i] = f(in[i]);
// Sized by elementwise_blocks or resident_grid_stride_blocks, so that the grid need not cover
// `count` threads.
class GridStrideRange {
 public:
  class Iterator {
   public:
    __device__ Iterator(int64_t index, int64_t step) : index_(index), step_(step) {}
    __device__ int64_t operator*() const { return index_; }
    __device__ Iterator& operator++() {
      index_ += step_;
      return *this;
    }
    // Against end(): whether this index is still inside the range.
    __device__ bool operator!=(const Iterator& end) const { return index_ < end.index_; }

   private:
    int64_t index_;
    int64_t step_;
  };

  __device__ explicit GridStrideRange(int64_t count) : count_(count) {}
  __device__ Iterator begin() const {
    return {static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x,
            static_cast<int64_t>(blockDim.x) * gridDim.x};
  }
  __device__ Iterator end() const { return {count_, 0}; }

 private:
  int64_t count_;
};

__device__ inline GridStrideRange grid_stride_range(int64_t count) {
  return GridStrideRange(count);
}

// The tensor's device made current (until this goes out of scope) and its current stream,
// for one launcher.
struct LaunchContext {
  explicit LaunchContext(const Tensor& t)
      : device(t.device().index), guard(device), stream(current_stream_handle(device)) {}
  int device;
  DeviceGuard guard;
  StreamHandle stream;
};

}  // namespace minidl::cuda
