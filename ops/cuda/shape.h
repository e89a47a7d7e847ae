#pragma once
// CUDA launchers for gathering and encoding (defined in ops/cuda/shape.cu), with the shapes of
// their CPU twins in ops/cpu/shape.h. All tensors are contiguous and on one device; kernels run
// on that device's current stream and never synchronise the host.
//
// Indices and labels live on the device, so they cannot be checked on the host without a
// synchronisation. The kernels check them instead: an out-of-range value stops the kernel with
// a device-side trap (as a PyTorch device assert does). The error surfaces at the next
// synchronising call, and the CUDA context is unusable afterwards.
#include "minidl/core/tensor.h"

namespace minidl::cuda {

// out [outer, index.numel(), inner] = x [outer, size, inner] at rows index[j] along dim.
void index_select_kernel(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index);
// grad_x [outer, size, inner] += grad [outer, index.numel(), inner] scattered to rows index[j],
// with atomicAdd (repeated indices add up; the order of the additions is not fixed).
void index_add_kernel(const Tensor& grad_x, const Tensor& grad, int64_t dim, const Tensor& index);
// out [labels.numel(), num_classes] (int64) = 1 at each label, 0 elsewhere; every element is
// written, so out needs no zero fill.
void one_hot_kernel(const Tensor& out, const Tensor& labels, int64_t num_classes);

}  // namespace minidl::cuda
