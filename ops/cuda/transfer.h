#pragma once
// The copies only CUDA has: between the host and a device, and between devices (defined in
// ops/cuda/copy.cu; ops/copy.cpp stages them). Copies within one device are the CUDA table of
// ops/copy_kernels.h. Both run on the current stream.
#include "minidl/core/tensor.h"

namespace minidl::cuda {

// Between host and device: both contiguous, same dtype and numel. Device-to-host waits for
// the copy (the host reads the result next); host-to-device from pinned memory does not.
void copy_host_device(const Tensor& dst, const Tensor& src);
// Between two devices: both contiguous, same dtype and numel.
void copy_peer(const Tensor& dst, const Tensor& src);

}  // namespace minidl::cuda
