#pragma once
// The CUDA element loop shared by element-wise kernels (include from .cu files only).
//
// launch_elementwise<Out, In...>(op, out, {inputs...}) computes, for every element i of out's
// shape, out[i] = op(in_0[i], ..., in_k[i]) with the raw element types (the op converts). Every
// input already has out's sizes; broadcast inputs carry zero strides. It makes out's device
// current, launches on its current stream, checks the launch, and never waits for the device.
//
// Geometry (Note [Element-wise geometry] in ops/iteration_shape.h): dimensions of size 1 are
// dropped, the rest ordered by out's strides (so channels-last and transposed results are
// stored in memory order), and neighbours merged where every operand is contiguous across
// them. What remains is either one dimension of unit strides for every operand, run by the
// vectorised kernel (16 bytes of the widest operand per access, core/cuda/vector_access.h) when
// every operand's data is aligned to its vector, or else up to kMaxDims dimensions, run by the
// strided kernel with an OffsetCalculator. Both kernels are grid-stride loops with 64-bit
// indices, and both apply the op to one element at a time, so they give the same bits.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "minidl/core/cuda/aligned_vector.cuh"
#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device.h"
#include "minidl/core/cuda/launch.cuh"  // elementwise_blocks
#include "minidl/core/cuda/stream.h"
#include "minidl/core/cuda/vector_access.h"
#include "minidl/core/tensor.h"
#include "minidl/ops/iteration_shape.h"

namespace minidl::cuda {

inline constexpr int kMaxDims = 8;

// Offsets (in elements) of one element into each of N operands, from its linear index in the
// iteration shape. Dimensions are stored innermost first.
template <int N>
struct OffsetCalculator {
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims][N] = {};

  __device__ __forceinline__ void get(int64_t linear, int64_t (&offsets)[N]) const {
#pragma unroll
    for (int k = 0; k < N; ++k) offsets[k] = 0;
#pragma unroll
    for (int d = 0; d < kMaxDims; ++d) {
      if (d == ndim) break;
      const int64_t index = linear % sizes[d];
      linear /= sizes[d];
#pragma unroll
      for (int k = 0; k < N; ++k) offsets[k] += index * strides[d][k];
    }
  }
};

// `shape` (ops/iteration_shape.h) as a kernel argument. Throws when more than kMaxDims
// dimensions remain; `sizes` is the logical shape, for the message.
template <int N>
OffsetCalculator<N> make_offset_calculator(const IterationShape<N>& shape, const Shape& sizes) {
  MINIDL_CHECK(shape.ndim() <= kMaxDims, "element-wise CUDA kernel: at most ", kMaxDims,
               " dimensions are supported after merging contiguous ones, got ", shape.ndim(),
               " for shape ", sizes, "; call contiguous() first");
  OffsetCalculator<N> calculator;
  calculator.ndim = static_cast<int>(shape.ndim());
  for (int d = 0; d < calculator.ndim; ++d) {
    calculator.sizes[d] = shape.sizes[d];
    for (int k = 0; k < N; ++k) calculator.strides[d][k] = shape.strides[d][k];
  }
  return calculator;
}

// ---- kernels ----

namespace detail {

template <class Op, class Out, class... In, size_t... I>
__device__ __forceinline__ void apply_at(const Op& op, Out* out, const int64_t* offsets,
                                         std::index_sequence<I...>, const In*... in) {
  out[offsets[0]] = op(in[offsets[I + 1]]...);
}

}  // namespace detail

namespace detail {

// op applied lane by lane to vectors the caller has loaded (all of them before any store).
template <int Width, class Out, class Op, class... In>
__device__ __forceinline__ AlignedVector<Out, Width> apply_to_vectors(
    const Op& op, const AlignedVector<In, Width>&... in) {
  AlignedVector<Out, Width> out;
#pragma unroll
  for (int lane = 0; lane < Width; ++lane) out.values[lane] = op(in.values[lane]...);
  return out;
}

}  // namespace detail

// Every operand dense and aligned to its vector: vector v is elements [v * Width, (v + 1) *
// Width); the numel % Width elements past the last whole vector go one at a time.
template <int Width, class Op, class Out, class... In>
__global__ void elementwise_vectorized_kernel(int64_t numel, Op op, Out* out, const In*... in) {
  const int64_t vectors = numel / Width;
  for (const int64_t v : grid_stride_range(vectors))
    store_vector<Width>(out, v,
                        detail::apply_to_vectors<Width, Out>(op, load_vector<Width>(in, v)...));
  const int64_t tail = vectors * Width;
  for (const int64_t i : grid_stride_range(numel - tail)) out[tail + i] = op(in[tail + i]...);
}

template <class Op, class Out, class... In>
__global__ void elementwise_strided_kernel(int64_t numel,
                                           OffsetCalculator<1 + sizeof...(In)> calculator, Op op,
                                           Out* out, const In*... in) {
  for (const int64_t i : grid_stride_range(numel)) {
    int64_t offsets[1 + sizeof...(In)];
    calculator.get(i, offsets);
    detail::apply_at(op, out, offsets, std::index_sequence_for<In...>{}, in...);
  }
}

// ---- launcher ----

template <class Out, class... In, class Op>
void launch_elementwise(const Op& op, const Tensor& out,
                        const std::array<Tensor, sizeof...(In)>& inputs) {
  constexpr int kOperands = 1 + static_cast<int>(sizeof...(In));
  const int64_t numel = out.numel();
  if (numel == 0) return;
  const int device = out.device().index;
  DeviceGuard device_guard(device);
  [&]<size_t... I>(std::index_sequence<I...>) {
    const IterationShape<kOperands> shape =
        make_iteration_shape<kOperands>(out.sizes(), {&out.strides(), &inputs[I].strides()...});
    Out* out_data = static_cast<Out*>(out.data_ptr());
    const StreamHandle stream = current_stream_handle(device);
    constexpr int kWidth = vector_width(std::max({sizeof(Out), sizeof(In)...}));
    const bool aligned = vector_aligned(out_data, kWidth, sizeof(Out)) &&
                         (vector_aligned(inputs[I].data_ptr(), kWidth, sizeof(In)) && ...);
    if (shape.is_flat() && aligned) {
      elementwise_vectorized_kernel<kWidth>
          <<<elementwise_blocks(ceil_div(numel, kWidth), device), kThreadsPerBlock, 0, stream>>>(
              numel, op, out_data, static_cast<const In*>(inputs[I].data_ptr())...);
    } else {  // also a flat shape whose data a view's offset misaligns for the vectors
      const unsigned blocks = elementwise_blocks(numel, device);
      elementwise_strided_kernel<<<blocks, kThreadsPerBlock, 0, stream>>>(
          numel, make_offset_calculator<kOperands>(shape, out.sizes()), op, out_data,
          static_cast<const In*>(inputs[I].data_ptr())...);
    }
    MINIDL_LAUNCH_CHECK();
  }
  (std::index_sequence_for<In...>{});
}

}  // namespace minidl::cuda
