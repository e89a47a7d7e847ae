#pragma once
// The kernel interface of ops/sort.h, implemented by ops/cpu/sort.cpp and ops/cuda/sort.cu;
// dispatched by kernels_for (Note [Kernel tables] in core/dispatch.h). Conventions:
// - The sorted dim is the last: `input` is contiguous [rows, size]; `values` (input's dtype) and
//   `indices` (int64) are contiguous [rows, k], k <= size, and are overwritten with the first k
//   elements of each row in the order of Note [Sort order] (ops/sort_math.h) and their
//   positions in the row. The order is a total one, so both backends give identical results.
// - CUDA kernels run on the current stream and never synchronise the host. Rows of up to
//   kSharedSortLimit elements are sorted by one block in shared memory; longer rows in global
//   memory (ops/cuda/sort.cu).
#include <cstdint>

#include "minidl/core/tensor.h"

namespace minidl {

// The longest row ops/cuda/sort.cu sorts in one block's shared memory (a power of two: 4096
// values of up to 8 bytes and their int32 positions fill the 48 KiB a block may use without
// opting in to more).
inline constexpr int64_t kSharedSortLimit = 4096;

struct SortKernels {
  void (*sort_rows)(const Tensor& values, const Tensor& indices, const Tensor& input,
                    bool descending);
  // The backward of sort and topk: grad_input [rows, size] is zeroed, then
  // grad_input[r, indices[r, j]] = grad[r, j] for grad and indices [rows, k] (the indices of a
  // row are distinct).
  void (*scatter_rows_grad)(const Tensor& grad_input, const Tensor& grad, const Tensor& indices);

  static const SortKernels kCpu;
  static const SortKernels kCuda;
};

}  // namespace minidl
