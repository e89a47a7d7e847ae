// CUDA copies: the strided dtype-converting element copy and fill (CopyKernels::kCuda,
// ops/copy_kernels.h), and the host<->device and peer copies (ops/cuda/transfer.h). Everything
// runs on the current stream of the tensors' device.
//
// The element copy and fill are launch_elementwise (ops/cuda/loops.cuh) with a converting (or
// constant) functor, so they walk the destination in its memory order (Note [Element-wise
// geometry]): a layout-changing copy (NCHW to channels-last, as autocast makes for every
// convolution input) stores with unit stride and gathers its reads, and a dtype conversion
// between contiguous tensors is one flat loop.
#include <cuda_runtime.h>

#include <type_traits>

#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device.h"
#include "minidl/core/cuda/device_dtype.h"
#include "minidl/core/cuda/device_error.h"
#include "minidl/core/cuda/graph.h"
#include "minidl/core/cuda/pinned_allocator.h"
#include "minidl/core/cuda/stream.h"
#include "minidl/core/half.h"
#include "minidl/ops/copy_kernels.h"
#include "minidl/ops/cuda/loops.cuh"
#include "minidl/ops/cuda/transfer.h"

namespace minidl::cuda {

namespace {

// ---- conversion: the same rules as the CPU copy (ops/cpu/copy.cpp) ----

template <class T>
inline constexpr bool is_16bit_float_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// Through float for the 16-bit types and through `!= 0` for bool, as PyTorch does. Within one
// dtype the bits pass unchanged: a float16 NaN through float would come back as CUDA's canonical
// NaN, and a strided copy (contiguous(), a transpose) must not change what it moves.
template <class To, class From>
MINIDL_HOST_DEVICE To convert(From value) {
  if constexpr (std::is_same_v<To, From>) {
    return value;
  } else if constexpr (std::is_same_v<To, bool>) {
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

template <class To, class From>
struct Convert {
  __device__ To operator()(From value) const { return convert<To>(value); }
};

template <class T>
struct Constant {
  T value;
  __device__ T operator()() const { return value; }
};

void check_contiguous_pair(const Tensor& dst, const Tensor& src, const char* op) {
  MINIDL_INTERNAL_ASSERT(dst.is_contiguous() && src.is_contiguous() && dst.dtype() == src.dtype() &&
                             dst.numel() == src.numel(),
                         op, ": expected contiguous tensors of one dtype and size, got ",
                         dst.dtype(), " ", dst.sizes(), " and ", src.dtype(), " ", src.sizes());
}

// ---- launchers ----

void copy_kernel(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() &&
      dst.sizes() == src.sizes()) {
    const int device = dst.device().index;
    DeviceGuard device_guard(device);
    MINIDL_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), dst.nbytes(),
                                      cudaMemcpyDeviceToDevice, current_stream_handle(device)));
    return;
  }
  visit_device_dtype(dst.dtype(), [&](auto dst_zero) {
    using To = decltype(dst_zero);
    visit_device_dtype(src.dtype(), [&](auto src_zero) {
      using From = decltype(src_zero);
      launch_elementwise<To, From>(Convert<To, From>{}, dst, {src});
    });
  });
}

void fill_kernel(const Tensor& dst, double value) {
  if (dst.numel() == 0) return;
  visit_device_dtype(dst.dtype(), [&](auto zero) {
    using T = decltype(zero);
    launch_elementwise<T>(Constant<T>{convert<T>(value)}, dst, {});
  });
}

}  // namespace

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
    raise_device_error_if_any(device);  // Note [Deferred device errors]
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

namespace minidl {

const CopyKernels CopyKernels::kCuda{
    .copy = cuda::copy_kernel,
    .fill = cuda::fill_kernel,
};

}  // namespace minidl
