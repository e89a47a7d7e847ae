// CUDA gathering and encoding: index_select, its index_add backward, one_hot.
//
// Conventions: every tensor is contiguous; around the selected dim, x is [outer, size, inner]
// and the gathered side [outer, count, inner] (count = index.numel()). index_select and
// one_hot overwrite their output; index_add accumulates into grad_x with atomicAdd.
// Out-of-range indices and labels are reported through Note [Deferred device errors]
// (core/cuda/device_error.h): their place in the output is written as zero, and index_add
// skips them.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <string>

#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device_dtype.h"
#include "minidl/core/cuda/device_error.cuh"
#include "minidl/core/cuda/launch.cuh"
#include "minidl/core/error.h"
#include "minidl/ops/around_dim.h"
#include "minidl/ops/shape_kernels.h"

namespace minidl::cuda {

namespace {

// Grid-stride loops cover any element count; more blocks than this only add scheduling cost.
constexpr int64_t kMaxBlocks = 4096;

unsigned int blocks_for(int64_t elements) {
  return grid_stride_blocks(elements, kThreadsPerBlock, kMaxBlocks);
}

// ---- kernels ----

// out [outer, count, inner] = x [outer, size, inner] at rows index[j]. Word is an unsigned
// integer as wide as the element: a gather only moves bits.
template <class Word>
__global__ void index_select_forward(Word* out, const Word* x, const int64_t* index, int64_t count,
                                     int64_t size, int64_t inner, int64_t total,
                                     DeviceErrorSlot error_slot) {
  for (const int64_t e : grid_stride_range(total)) {
    const int64_t i = e % inner, row = e / inner;
    const int64_t j = row % count, outer = row / count;
    const int64_t source = index[j];
    if (source < 0 || source >= size) [[unlikely]] {
      report_device_error(error_slot, source, j, size);
      out[e] = Word{0};
      continue;
    }
    out[e] = x[(outer * size + source) * inner + i];
  }
}

__device__ __forceinline__ void atomic_add(float* address, float value) {
  atomicAdd(address, value);
}
// minidl's Half and BFloat16 hold the same 16 bits as CUDA's __half and __nv_bfloat16.
__device__ __forceinline__ void atomic_add(Half* address, Half value) {
  atomicAdd(reinterpret_cast<__half*>(address), __float2half(static_cast<float>(value)));
}
__device__ __forceinline__ void atomic_add(BFloat16* address, BFloat16 value) {
  atomicAdd(reinterpret_cast<__nv_bfloat16*>(address), __float2bfloat16(static_cast<float>(value)));
}

// grad_x [outer, size, inner] += grad [outer, count, inner] at rows index[j].
template <class T>
__global__ void index_add_backward(T* grad_x, const T* grad, const int64_t* index, int64_t count,
                                   int64_t size, int64_t inner, int64_t total) {
  for (const int64_t e : grid_stride_range(total)) {
    const int64_t i = e % inner, row = e / inner;
    const int64_t j = row % count, outer = row / count;
    if (index[j] < 0 || index[j] >= size) [[unlikely]]
      continue;  // the forward reported it
    atomic_add(grad_x + (outer * size + index[j]) * inner + i, grad[e]);
  }
}

// out [count, num_classes] = (class == labels[row]).
__global__ void one_hot_forward(int64_t* out, const int64_t* labels, int64_t num_classes,
                                int64_t total, DeviceErrorSlot error_slot) {
  for (const int64_t e : grid_stride_range(total)) {
    const int64_t row = e / num_classes, cls = e % num_classes;
    const int64_t label = labels[row];
    if (label < 0 || label >= num_classes) [[unlikely]] {
      report_device_error(error_slot, label, row, num_classes);
      out[e] = 0;
      continue;
    }
    out[e] = cls == label ? 1 : 0;
  }
}

// The messages of the deferred errors, worded as the CPU kernels' (ops/cpu/shape.cpp).
std::string index_select_index_error(int64_t index, int64_t position, int64_t size) {
  return ::minidl::detail::concat("index_select: index ", index,
                                  " is out of range for a dimension of size ", size,
                                  " (at position ", position, " of the index)");
}
std::string one_hot_label_error(int64_t label, int64_t position, int64_t num_classes) {
  return ::minidl::detail::concat("one_hot: label ", label, " is out of range for ", num_classes,
                                  " classes (at position ", position, ")");
}

// ---- launchers ----

void index_select_kernel(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index) {
  const AroundDim shape = around_dim(x, dim);
  const int64_t count = index.numel(), total = out.numel();
  if (total == 0) return;
  LaunchContext context(x);
  const DeviceErrorSlot error_slot = device_error_slot(context.device, index_select_index_error);
  visit_element_width(x.dtype(), [&](auto word) {
    using Word = decltype(word);
    index_select_forward<Word><<<blocks_for(total), kThreadsPerBlock, 0, context.stream>>>(
        static_cast<Word*>(out.data_ptr()), static_cast<const Word*>(x.data_ptr()),
        index.data_ptr<int64_t>(), count, shape.size, shape.inner, total, error_slot);
    MINIDL_LAUNCH_CHECK();
  });
}

void index_add_kernel(const Tensor& grad_x, const Tensor& grad, int64_t dim, const Tensor& index) {
  const AroundDim shape = around_dim(grad_x, dim);
  const int64_t count = index.numel(), total = grad.numel();
  if (total == 0) return;
  LaunchContext context(grad_x);
  visit_device_floating(grad_x.dtype(), "index_select backward", [&](auto zero) {
    using T = decltype(zero);
    index_add_backward<T><<<blocks_for(total), kThreadsPerBlock, 0, context.stream>>>(
        static_cast<T*>(grad_x.data_ptr()), static_cast<const T*>(grad.data_ptr()),
        index.data_ptr<int64_t>(), count, shape.size, shape.inner, total);
    MINIDL_LAUNCH_CHECK();
  });
}

void one_hot_kernel(const Tensor& out, const Tensor& labels, int64_t num_classes) {
  const int64_t total = out.numel();
  if (total == 0) return;
  LaunchContext context(out);
  const DeviceErrorSlot error_slot = device_error_slot(context.device, one_hot_label_error);
  one_hot_forward<<<blocks_for(total), kThreadsPerBlock, 0, context.stream>>>(
      out.data_ptr<int64_t>(), labels.data_ptr<int64_t>(), num_classes, total, error_slot);
  MINIDL_LAUNCH_CHECK();
}

}  // namespace

}  // namespace minidl::cuda

namespace minidl {

const ShapeKernels ShapeKernels::kCuda{
    .index_select = cuda::index_select_kernel,
    .index_add = cuda::index_add_kernel,
    .one_hot = cuda::one_hot_kernel,
};

}  // namespace minidl
