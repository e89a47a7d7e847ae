#pragma once
// The kernel interface of augment_batch (data/transforms/batch_augment.h), implemented by
// data/cpu/batch_augment.cpp (parallel over the samples) and data/cuda/batch_augment.cu (one
// block per sample); dispatched by kernels_for (Note [Kernel tables] in core/dispatch.h).
// Conventions:
// - Every tensor is contiguous, on one device, and already validated by augment_batch:
//   out [B, C, out_h, out_w] (overwritten), images [B, C, in_h, in_w], sample_indices int64 [B].
// - Dtypes: uint8 -> uint8, uint8 -> float32 (normalising), float32 -> float32.
// - The sizes and random draws come from `params` (data/transforms/batch_augment_params.h),
//   whose per-pixel function both backends evaluate, so their results agree bit for bit.
// - CUDA kernels run on the current stream of the tensors' device and never wait for it.
#include "minidl/core/tensor.h"
#include "minidl/data/transforms/batch_augment_params.h"

namespace minidl::data {

struct BatchAugmentKernels {
  void (*augment_batch)(const Tensor& out, const Tensor& images, const Tensor& sample_indices,
                        const BatchAugmentParams& params);

  static const BatchAugmentKernels kCpu;
  static const BatchAugmentKernels kCuda;
};

}  // namespace minidl::data
