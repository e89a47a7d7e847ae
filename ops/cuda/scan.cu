// CUDA kernels of ops/scan_kernels.h: one thread per line (outer, inner), scanning it serially
// with the functions of ops/scan_math.h, so the results equal the CPU's to the bit (the
// backward's sums may contract into FMAs, so it is close, not equal). Neighbouring threads take
// neighbouring inner positions, so their loads coalesce when inner > 1.
#include <cuda_runtime.h>

#include <cstdint>

#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device_dtype.h"
#include "minidl/core/cuda/launch.cuh"
#include "minidl/ops/scan_kernels.h"
#include "minidl/ops/scan_math.h"

namespace minidl::cuda {

namespace {

// Calls fn(T{}) for the dtypes the scans take on a device: float32, the 16-bit floats, int64.
template <class Fn>
void visit_device_scan_dtype(DType dtype, const char* op, Fn&& fn) {
  if (dtype == kInt64) return fn(int64_t{});
  visit_device_floating(dtype, op, fn);
}

__host__ __device__ inline int64_t line_offset(int64_t line, int64_t size, int64_t inner) {
  return (line / inner) * size * inner + line % inner;
}

// ---- kernels ----

template <class T>
__global__ void cumsum_lines(T* out, const T* input, int64_t lines, int64_t size, int64_t inner,
                             bool reverse) {
  for (const int64_t n : grid_stride_range(lines)) {
    const int64_t offset = line_offset(n, size, inner);
    scan_math::cumsum_line(out + offset, input + offset, size, inner, reverse);
  }
}

template <class T>
__global__ void cumprod_lines(T* out, const T* input, int64_t lines, int64_t size, int64_t inner) {
  for (const int64_t n : grid_stride_range(lines)) {
    const int64_t offset = line_offset(n, size, inner);
    scan_math::cumprod_line(out + offset, input + offset, size, inner);
  }
}

template <class T>
__global__ void cumprod_backward_lines(T* grad_input, const T* grad, const T* input, int64_t lines,
                                       int64_t size, int64_t inner) {
  for (const int64_t n : grid_stride_range(lines)) {
    const int64_t offset = line_offset(n, size, inner);
    scan_math::cumprod_backward_line(grad_input + offset, grad + offset, input + offset, size,
                                     inner);
  }
}

// ---- launchers ----

void cumsum_kernel(const Tensor& out, const Tensor& input, int64_t outer, int64_t size,
                   int64_t inner, bool reverse) {
  const int64_t lines = outer * inner;
  if (lines == 0 || size == 0) return;
  LaunchContext context(input);
  visit_device_scan_dtype(input.dtype(), "cumsum", [&](auto zero) {
    using T = decltype(zero);
    cumsum_lines<T>
        <<<elementwise_blocks(lines, context.device), kThreadsPerBlock, 0, context.stream>>>(
            static_cast<T*>(out.data_ptr()), static_cast<const T*>(input.data_ptr()), lines, size,
            inner, reverse);
    MINIDL_LAUNCH_CHECK();
  });
}

void cumprod_kernel(const Tensor& out, const Tensor& input, int64_t outer, int64_t size,
                    int64_t inner) {
  const int64_t lines = outer * inner;
  if (lines == 0 || size == 0) return;
  LaunchContext context(input);
  visit_device_scan_dtype(input.dtype(), "cumprod", [&](auto zero) {
    using T = decltype(zero);
    cumprod_lines<T>
        <<<elementwise_blocks(lines, context.device), kThreadsPerBlock, 0, context.stream>>>(
            static_cast<T*>(out.data_ptr()), static_cast<const T*>(input.data_ptr()), lines, size,
            inner);
    MINIDL_LAUNCH_CHECK();
  });
}

void cumprod_backward_kernel(const Tensor& grad_input, const Tensor& grad, const Tensor& input,
                             int64_t outer, int64_t size, int64_t inner) {
  const int64_t lines = outer * inner;
  if (lines == 0 || size == 0) return;
  LaunchContext context(input);
  visit_device_floating(input.dtype(), "cumprod backward", [&](auto zero) {
    using T = decltype(zero);
    cumprod_backward_lines<T>
        <<<elementwise_blocks(lines, context.device), kThreadsPerBlock, 0, context.stream>>>(
            static_cast<T*>(grad_input.data_ptr()), static_cast<const T*>(grad.data_ptr()),
            static_cast<const T*>(input.data_ptr()), lines, size, inner);
    MINIDL_LAUNCH_CHECK();
  });
}

}  // namespace

}  // namespace minidl::cuda

namespace minidl {

const ScanKernels ScanKernels::kCuda{
    .cumsum = cuda::cumsum_kernel,
    .cumprod = cuda::cumprod_kernel,
    .cumprod_backward = cuda::cumprod_backward_kernel,
};

}  // namespace minidl
