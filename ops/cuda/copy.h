#pragma once
// CUDA launchers for copies (defined in ops/cuda/copy.cu). All run on the current stream.
#include "minidl/core/tensor.h"

namespace minidl::cuda {

// Same device: dst[i] = convert(src[i]); src has dst's shape (possibly a broadcast view). Walks
// dst in its memory order (unit-stride stores into any layout; Note [Element-wise geometry]).
void copy_kernel(const Tensor& dst, const Tensor& src);
void fill_kernel(const Tensor& dst, double value);
// Between host and device: both contiguous, same dtype and numel. Device-to-host waits for
// the copy (the host reads the result next); host-to-device from pinned memory does not.
void copy_host_device(const Tensor& dst, const Tensor& src);
// Between two devices: both contiguous, same dtype and numel.
void copy_peer(const Tensor& dst, const Tensor& src);

}  // namespace minidl::cuda
