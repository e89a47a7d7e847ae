#pragma once
// The two CUDA attention implementations as kernel tables, the tensor-core kernels
// (ops/cuda/attention_tensor_cores.h) and the CUDA-core ones (ops/cuda/attention.cu), callable
// in any build from code outside the library (tests): the CUDA backend's functions exist only
// in a CUDA build, and only minidl's own sources know which build they are in
// (core/cuda/build.h), so AttentionKernels::kCuda is out of their reach.
#include <initializer_list>

#include "minidl/core/tensor.h"
#include "minidl/ops/attention_kernels.h"

namespace minidl {

// cuda::attention_forward_tensor_cores and cuda::attention_backward_tensor_cores, which refuse
// a problem that does not fit; null entries in a build without CUDA.
const AttentionKernels& tensor_core_attention_kernels();

// cuda::cuda_core_attention_kernels: the CUDA-core kernels whatever MINIDL_CUDA_ATTENTION
// says; null entries in a build without CUDA.
const AttentionKernels& cuda_core_attention_kernels();

// cuda::tensor_core_attention_fits; false in a build without CUDA.
bool tensor_core_attention_fits(const AttentionParams& params,
                                std::initializer_list<const Tensor*> operands);

// cuda::tensor_core_attention_selected (MINIDL_CUDA_ATTENTION=tensor-cores); false in a build
// without CUDA.
bool tensor_core_attention_selected();

}  // namespace minidl
