// CUDA pooling: one thread per element of the tensor being written (the output forward, the
// input gradient backward), applying the per-element math of ops/pool_math.h, the same
// functions the CPU runs.
//
// Conventions:
// - Threads walk the written tensor in its memory order: (n, c, h, w) with w fastest for NCHW,
//   (n, h, w, c) with c fastest for channels-last. Neighbouring threads then write neighbouring
//   addresses, and read neighbouring addresses when the input has the same layout.
// - Backward gathers (see ops/pool_math.h): every input element sums the gradients of the
//   windows holding it. No atomics, so results repeat exactly and need no zeroed buffer.
//
// Pooling and batch norm on CUDA are these kernels alone; cuDNN's pooling and batch norm have
// not been measured against them (docs/gpu.md, "Not run on a GPU yet").
#include <cuda_runtime.h>

#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device_dtype.h"
#include "minidl/core/cuda/launch.cuh"
#include "minidl/ops/pool_kernels.h"

namespace minidl::cuda {

namespace {

// What values are read and summed in: float for float32 and the 16-bit types (float64 never
// reaches the GPU).
using Acc = float;

struct Sizes4 {
  int64_t n, c, h, w;
};

// ---- kernels ----

// Element i of a tensor of `sizes` in memory order -> its (n, c, h, w).
template <bool kChannelsLast>
__device__ __forceinline__ void decode_position(int64_t i, const Sizes4& sizes, int64_t& n,
                                                int64_t& c, int64_t& h, int64_t& w) {
  if constexpr (kChannelsLast) {
    c = i % sizes.c;
    i /= sizes.c;
    w = i % sizes.w;
    i /= sizes.w;
    h = i % sizes.h;
    n = i / sizes.h;
  } else {
    w = i % sizes.w;
    i /= sizes.w;
    h = i % sizes.h;
    i /= sizes.h;
    c = i % sizes.c;
    n = i / sizes.c;
  }
}

// Calls fn(n, c, h, w) once for every position of `sizes`, in memory order.
template <bool kChannelsLast, class Fn>
__global__ void for_each_position_kernel(Sizes4 sizes, Fn fn) {
  const int64_t count = sizes.n * sizes.c * sizes.h * sizes.w;
  for (const int64_t i : grid_stride_range(count)) {
    int64_t n, c, h, w;
    decode_position<kChannelsLast>(i, sizes, n, c, h, w);
    fn(n, c, h, w);
  }
}

// ---- per-position functors (device code has no extended lambdas in this build) ----

template <class T>
struct MaxPoolForward {
  const T* in;
  pool::Strides4 in_strides;
  T* out;
  pool::Strides4 out_strides;
  int64_t* indices;
  pool::Strides4 index_strides;
  pool::Window2d window;
  __device__ void operator()(int64_t n, int64_t c, int64_t oh, int64_t ow) const {
    const auto best = pool::max_pool_element<Acc>(in, in_strides, window, n, c, oh, ow);
    out[out_strides.at(n, c, oh, ow)] = static_cast<T>(best.value);
    indices[index_strides.at(n, c, oh, ow)] = best.index;
  }
};

template <class T>
struct AvgPoolForward {
  const T* in;
  pool::Strides4 in_strides;
  T* out;
  pool::Strides4 out_strides;
  pool::Window2d window;
  bool count_include_pad;
  __device__ void operator()(int64_t n, int64_t c, int64_t oh, int64_t ow) const {
    out[out_strides.at(n, c, oh, ow)] = static_cast<T>(
        pool::avg_pool_element<Acc>(in, in_strides, window, count_include_pad, n, c, oh, ow));
  }
};

template <class T>
struct AdaptiveAvgForward {
  const T* in;
  pool::Strides4 in_strides;
  T* out;
  pool::Strides4 out_strides;
  pool::Adaptive2d window;
  __device__ void operator()(int64_t n, int64_t c, int64_t oh, int64_t ow) const {
    out[out_strides.at(n, c, oh, ow)] =
        static_cast<T>(pool::adaptive_avg_element<Acc>(in, in_strides, window, n, c, oh, ow));
  }
};

template <class T>
struct MaxPoolBackward {
  const T* grad;
  pool::Strides4 grad_strides;
  const int64_t* indices;
  pool::Strides4 index_strides;
  T* grad_input;
  pool::Strides4 grad_input_strides;
  pool::Window2d window;
  __device__ void operator()(int64_t n, int64_t c, int64_t ih, int64_t iw) const {
    grad_input[grad_input_strides.at(n, c, ih, iw)] =
        static_cast<T>(pool::max_pool_grad_element<Acc>(grad, grad_strides, indices, index_strides,
                                                        window, n, c, ih, iw));
  }
};

template <class T>
struct AvgPoolBackward {
  const T* grad;
  pool::Strides4 grad_strides;
  T* grad_input;
  pool::Strides4 grad_input_strides;
  pool::Window2d window;
  bool count_include_pad;
  __device__ void operator()(int64_t n, int64_t c, int64_t ih, int64_t iw) const {
    grad_input[grad_input_strides.at(n, c, ih, iw)] =
        static_cast<T>(pool::avg_pool_grad_element<Acc>(grad, grad_strides, window,
                                                        count_include_pad, n, c, ih, iw));
  }
};

template <class T>
struct AdaptiveAvgBackward {
  const T* grad;
  pool::Strides4 grad_strides;
  T* grad_input;
  pool::Strides4 grad_input_strides;
  pool::Adaptive2d window;
  __device__ void operator()(int64_t n, int64_t c, int64_t ih, int64_t iw) const {
    grad_input[grad_input_strides.at(n, c, ih, iw)] = static_cast<T>(
        pool::adaptive_avg_grad_element<Acc>(grad, grad_strides, window, n, c, ih, iw));
  }
};

// ---- launchers ----

pool::Strides4 strides_of(const Tensor& t) {
  return {t.stride(0), t.stride(1), t.stride(2), t.stride(3)};
}

// Runs fn over every position of `written` (4-D), on its device's current stream, in the
// memory order of its layout.
template <class Fn>
void launch_over_positions(const Tensor& written, const Fn& fn) {
  const Sizes4 sizes{written.size(0), written.size(1), written.size(2), written.size(3)};
  const int64_t count = written.numel();
  if (count == 0) return;
  LaunchContext context(written);
  const unsigned blocks = resident_grid_stride_blocks(count, kThreadsPerBlock,
                                                      kBlocksPerMultiprocessor, context.device);
  if (written.suggest_memory_format() == MemoryFormat::ChannelsLast) {
    for_each_position_kernel<true><<<blocks, kThreadsPerBlock, 0, context.stream>>>(sizes, fn);
  } else {
    for_each_position_kernel<false><<<blocks, kThreadsPerBlock, 0, context.stream>>>(sizes, fn);
  }
  MINIDL_LAUNCH_CHECK();
}

void max_pool2d_kernel(const Tensor& out, const Tensor& indices, const Tensor& input,
                       const pool::Window2d& window) {
  visit_device_floating(input.dtype(), "max_pool2d", [&](auto zero) {
    using T = decltype(zero);
    launch_over_positions(
        out, MaxPoolForward<T>{input.data_ptr<T>(), strides_of(input), out.data_ptr<T>(),
                               strides_of(out), indices.data_ptr<int64_t>(), strides_of(indices),
                               window});
  });
}

void avg_pool2d_kernel(const Tensor& out, const Tensor& input, const pool::Window2d& window,
                       bool count_include_pad) {
  visit_device_floating(input.dtype(), "avg_pool2d", [&](auto zero) {
    using T = decltype(zero);
    launch_over_positions(
        out, AvgPoolForward<T>{input.data_ptr<T>(), strides_of(input), out.data_ptr<T>(),
                               strides_of(out), window, count_include_pad});
  });
}

void adaptive_avg_pool2d_kernel(const Tensor& out, const Tensor& input,
                                const pool::Adaptive2d& window) {
  visit_device_floating(input.dtype(), "adaptive_avg_pool2d", [&](auto zero) {
    using T = decltype(zero);
    launch_over_positions(out, AdaptiveAvgForward<T>{input.data_ptr<T>(), strides_of(input),
                                                     out.data_ptr<T>(), strides_of(out), window});
  });
}

void max_pool2d_backward_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                const Tensor& indices, const pool::Window2d& window) {
  visit_device_floating(grad_output.dtype(), "max_pool2d", [&](auto zero) {
    using T = decltype(zero);
    launch_over_positions(
        grad_input, MaxPoolBackward<T>{grad_output.data_ptr<T>(), strides_of(grad_output),
                                       indices.data_ptr<int64_t>(), strides_of(indices),
                                       grad_input.data_ptr<T>(), strides_of(grad_input), window});
  });
}

void avg_pool2d_backward_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                const pool::Window2d& window, bool count_include_pad) {
  visit_device_floating(grad_output.dtype(), "avg_pool2d", [&](auto zero) {
    using T = decltype(zero);
    launch_over_positions(
        grad_input, AvgPoolBackward<T>{grad_output.data_ptr<T>(), strides_of(grad_output),
                                       grad_input.data_ptr<T>(), strides_of(grad_input), window,
                                       count_include_pad});
  });
}

void adaptive_avg_pool2d_backward_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                         const pool::Adaptive2d& window) {
  visit_device_floating(grad_output.dtype(), "adaptive_avg_pool2d", [&](auto zero) {
    using T = decltype(zero);
    launch_over_positions(
        grad_input,
        AdaptiveAvgBackward<T>{grad_output.data_ptr<T>(), strides_of(grad_output),
                               grad_input.data_ptr<T>(), strides_of(grad_input), window});
  });
}

}  // namespace

}  // namespace minidl::cuda

namespace minidl {

const PoolKernels PoolKernels::kCuda{
    .max_pool2d = cuda::max_pool2d_kernel,
    .avg_pool2d = cuda::avg_pool2d_kernel,
    .adaptive_avg_pool2d = cuda::adaptive_avg_pool2d_kernel,
    .max_pool2d_backward = cuda::max_pool2d_backward_kernel,
    .avg_pool2d_backward = cuda::avg_pool2d_backward_kernel,
    .adaptive_avg_pool2d_backward = cuda::adaptive_avg_pool2d_backward_kernel,
};

}  // namespace minidl
