#pragma once
// The CUDA launcher of augment_batch (data/transforms/batch_augment.h), defined in
// batch_augment.cu. Same contract as data/cpu/batch_augment.h, on one CUDA device; runs on its
// current stream.
#include "minidl/core/tensor.h"
#include "minidl/data/transforms/batch_augment_params.h"

namespace minidl::cuda {

void augment_batch_kernel(const Tensor& out, const Tensor& images, const Tensor& sample_indices,
                          const data::BatchAugmentParams& params);

}  // namespace minidl::cuda
