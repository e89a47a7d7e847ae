#pragma once
// The CPU loop of augment_batch (data/transforms/batch_augment.h). All tensors contiguous, on the
// CPU, already validated: out [B, C, out_h, out_w], images [B, C, in_h, in_w],
// sample_indices int64 [B]. Dtypes: uint8 -> uint8, uint8 -> float32 (normalising),
// float32 -> float32.
#include "minidl/core/tensor.h"
#include "minidl/data/transforms/batch_augment_params.h"

namespace minidl::cpu {

void augment_batch_kernel(const Tensor& out, const Tensor& images, const Tensor& sample_indices,
                          const data::BatchAugmentParams& params);

}  // namespace minidl::cpu
