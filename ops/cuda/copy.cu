// CUDA copies: the strided dtype-converting element kernel, fill, host<->device and peer
// copies. Everything runs on the current stream of the tensors' device.
//
// Conventions: a kernel sees at most kMaxDims dimensions after coalescing (dimensions that are
// contiguous with each other in every operand are merged, size-1 dimensions dropped), with
// sizes and strides in elements passed by value. One thread per element, grid-stride loop.
#include <cuda_runtime.h>

#include <array>
#include <type_traits>

#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/cuda.h"
#include "minidl/core/cuda/graph.h"
#include "minidl/core/cuda/pinned_allocator.h"
#include "minidl/core/cuda/stream.h"
#include "minidl/core/half.h"
#include "minidl/ops/cuda/copy.h"

namespace minidl::cuda {

namespace {

constexpr int kMaxDims = 8;
constexpr int kThreadsPerBlock = 256;
constexpr int64_t kMaxBlocks = 65536;  // the grid-stride loop covers the rest

// ---- layout ----

// Sizes and the strides of N operands (in elements), for a kernel argument.
template <int N>
struct StridedLayout {
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[N][kMaxDims] = {};
};

template <int N>
StridedLayout<N> coalesced_layout(const Shape& sizes, const std::array<Shape, N>& strides,
                                  const char* op) {
  // Walk from the innermost dimension out; merge a dimension into the one inside it when,
  // for every operand, stepping it is the same as running off the end of the inner one.
  std::vector<int64_t> merged_sizes;
  std::vector<std::array<int64_t, N>> merged_strides;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    if (sizes[d] == 1) continue;
    std::array<int64_t, N> dim_strides;
    for (int k = 0; k < N; ++k) dim_strides[k] = strides[k][d];
    bool mergeable = !merged_sizes.empty();
    for (int k = 0; k < N && mergeable; ++k)
      mergeable = dim_strides[k] == merged_strides.back()[k] * merged_sizes.back();
    if (mergeable) {
      merged_sizes.back() *= sizes[d];
    } else {
      merged_sizes.push_back(sizes[d]);
      merged_strides.push_back(dim_strides);
    }
  }
  MINIDL_CHECK(merged_sizes.size() <= static_cast<size_t>(kMaxDims), op, ": CUDA kernels support ",
               "up to ", kMaxDims, " non-mergeable dimensions, got ", merged_sizes.size(),
               " for shape ", sizes, "; call contiguous() first");
  StridedLayout<N> layout;
  layout.ndim = static_cast<int>(merged_sizes.size());
  for (int d = 0; d < layout.ndim; ++d) {  // back to outermost-first order
    const size_t from = merged_sizes.size() - 1 - static_cast<size_t>(d);
    layout.sizes[d] = merged_sizes[from];
    for (int k = 0; k < N; ++k) layout.strides[k][d] = merged_strides[from][k];
  }
  return layout;
}

// Offsets (in elements) of logical element `index` into each operand.
template <int N>
__device__ __forceinline__ void element_offsets(const StridedLayout<N>& layout, int64_t index,
                                                int64_t (&offsets)[N]) {
  for (int k = 0; k < N; ++k) offsets[k] = 0;
  for (int d = layout.ndim - 1; d >= 0; --d) {
    const int64_t size = layout.sizes[d];
    const int64_t i = index % size;
    index /= size;
    for (int k = 0; k < N; ++k) offsets[k] += i * layout.strides[k][d];
  }
}

unsigned int grid_for(int64_t numel) {
  const int64_t blocks = (numel + kThreadsPerBlock - 1) / kThreadsPerBlock;
  return static_cast<unsigned int>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// ---- conversion: the same rules as the CPU copy (ops/cpu/copy.cpp) ----

template <class T>
inline constexpr bool is_16bit_float_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// Through float for the 16-bit types and through `!= 0` for bool, as PyTorch does.
template <class To, class From>
MINIDL_HOST_DEVICE To convert(From value) {
  if constexpr (std::is_same_v<To, bool>) {
    if constexpr (is_16bit_float_v<From>)
      return static_cast<float>(value) != 0.0f;
    else
      return value != From(0);
  } else if constexpr (is_16bit_float_v<From>) {
    if constexpr (is_16bit_float_v<To>)
      return To(static_cast<float>(value));
    else
      return static_cast<To>(static_cast<float>(value));
  } else if constexpr (is_16bit_float_v<To>) {
    return To(static_cast<float>(value));
  } else {
    return static_cast<To>(value);
  }
}

// ---- kernels ----

template <class To, class From>
__global__ void copy_strided_kernel(To* out, const From* in, StridedLayout<2> layout,
                                    int64_t numel) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < numel;
       i += step) {
    int64_t offsets[2];
    element_offsets(layout, i, offsets);
    out[offsets[0]] = convert<To>(in[offsets[1]]);
  }
}

template <class T>
__global__ void fill_strided_kernel(T* out, T value, StridedLayout<1> layout, int64_t numel) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < numel;
       i += step) {
    int64_t offsets[1];
    element_offsets(layout, i, offsets);
    out[offsets[0]] = value;
  }
}

void check_contiguous_pair(const Tensor& dst, const Tensor& src, const char* op) {
  MINIDL_INTERNAL_ASSERT(dst.is_contiguous() && src.is_contiguous() && dst.dtype() == src.dtype() &&
                             dst.numel() == src.numel(),
                         op, ": expected contiguous tensors of one dtype and size, got ",
                         dst.dtype(), " ", dst.sizes(), " and ", src.dtype(), " ", src.sizes());
}

}  // namespace

// ---- launchers ----

void copy_kernel(const Tensor& dst, const Tensor& src) {
  const int64_t numel = dst.numel();
  if (numel == 0) return;
  const int device = dst.device().index;
  DeviceGuard device_guard(device);
  const StreamHandle stream = current_stream_handle(device);
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() &&
      dst.sizes() == src.sizes()) {
    MINIDL_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), dst.nbytes(),
                                      cudaMemcpyDeviceToDevice, stream));
    return;
  }
  const StridedLayout<2> layout =
      coalesced_layout<2>(dst.sizes(), {dst.strides(), src.strides()}, "copy_");
  visit_dtype(dst.dtype(), [&](auto dst_zero) {
    using To = decltype(dst_zero);
    visit_dtype(src.dtype(), [&](auto src_zero) {
      using From = decltype(src_zero);
      copy_strided_kernel<To, From><<<grid_for(numel), kThreadsPerBlock, 0, stream>>>(
          static_cast<To*>(dst.data_ptr()), static_cast<const From*>(src.data_ptr()), layout,
          numel);
      MINIDL_LAUNCH_CHECK();
    });
  });
}

void fill_kernel(const Tensor& dst, double value) {
  const int64_t numel = dst.numel();
  if (numel == 0) return;
  const int device = dst.device().index;
  DeviceGuard device_guard(device);
  const StreamHandle stream = current_stream_handle(device);
  const StridedLayout<1> layout = coalesced_layout<1>(dst.sizes(), {dst.strides()}, "fill_");
  visit_dtype(dst.dtype(), [&](auto zero) {
    using T = decltype(zero);
    fill_strided_kernel<T><<<grid_for(numel), kThreadsPerBlock, 0, stream>>>(
        static_cast<T*>(dst.data_ptr()), convert<T>(value), layout, numel);
    MINIDL_LAUNCH_CHECK();
  });
}

void copy_host_device(const Tensor& dst, const Tensor& src) {
  check_contiguous_pair(dst, src, "copy_host_device");
  const size_t nbytes = dst.nbytes();
  if (nbytes == 0) return;
  if (dst.is_cpu()) {
    // Device to host: the host reads the result next, so wait for it.
    const int device = src.device().index;
    DeviceGuard device_guard(device);
    check_not_capturing(device, "a copy from CUDA to the host (item(), .to(kCPU))",
                        "the host would read the value once, at capture, before any captured "
                        "work has run; keep values on the device inside a captured step");
    const StreamHandle stream = current_stream_handle(device);
    MINIDL_CUDA_CHECK(
        cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), nbytes, cudaMemcpyDeviceToHost, stream));
    MINIDL_CUDA_CHECK(cudaStreamSynchronize(stream));
    return;
  }
  // Host to device. From pinned memory the copy is truly asynchronous, so the pinned pool must
  // not hand the block out again before it has run; from pageable memory the runtime stages the
  // bytes before returning, so the source may be freed at once.
  const int device = dst.device().index;
  DeviceGuard device_guard(device);
  check_not_capturing(device, "a copy from host memory to CUDA",
                      "every replay would read the host buffer again, long after this copy "
                      "returned and the buffer was freed or reused; copy the data into a tensor "
                      "made before the capture, outside it, before each replay");
  const Stream stream = current_stream(device);
  MINIDL_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), nbytes, cudaMemcpyHostToDevice,
                                    stream.handle()));
  if (is_pinned(src.data_ptr())) record_pinned_use(src.data_ptr(), stream);
}

void copy_peer(const Tensor& dst, const Tensor& src) {
  check_contiguous_pair(dst, src, "copy_peer");
  const size_t nbytes = dst.nbytes();
  if (nbytes == 0) return;
  const int dst_device = dst.device().index, src_device = src.device().index;
  const Stream dst_stream = current_stream(dst_device), src_stream = current_stream(src_device);
  // The copy runs on the destination's stream, after the work queued on the source's stream
  // (which produced src), and the source's stream waits for the copy before it may reuse src.
  Event source_ready;
  source_ready.record(src_stream);
  source_ready.wait(dst_stream);
  {
    DeviceGuard device_guard(dst_device);
    MINIDL_CUDA_CHECK(cudaMemcpyPeerAsync(dst.data_ptr(), dst_device, src.data_ptr(), src_device,
                                          nbytes, dst_stream.handle()));
  }
  Event copy_done;
  copy_done.record(dst_stream);
  copy_done.wait(src_stream);
}

}  // namespace minidl::cuda
