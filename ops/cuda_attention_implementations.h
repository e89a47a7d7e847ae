#pragma once
// The three CUDA attention implementations, the choice among them, and each as
// a kernel table callable in any build from code outside the library (tests): the CUDA backend's
// functions exist only in a CUDA build, and only minidl's own sources know which build they are
// in (core/cuda/build.h), so AttentionKernels::kCuda is out of their reach.
//   cudnn         ops/cuda/attention_cudnn.cpp: cuDNN's fused attention, float16 and bfloat16
//                 without dropout or attn_mask, in a build with the cuDNN frontend's headers
//   tensor-cores  ops/cuda/attention_tensor_cores.cu: FlashAttention-2 on WMMA, float16 and
//                 bfloat16 without dropout, D and Dv multiples of 16 up to 128
//   cuda-cores    ops/cuda/attention.cu: float32 accumulators on CUDA cores, every dtype, mask
//                 and dropout
// MINIDL_CUDA_ATTENTION unset (or "auto"): each pass takes the first of these, in this order,
// that fits it (the order of their speed on an H100, docs/benchmarks.md; cuDNN only where its
// plan exists or may be built, ops/cuda/attention_cudnn.h). Set to one name: that one where
// it fits, else the CUDA cores.
#include <initializer_list>
#include <string_view>

#include "minidl/core/tensor.h"
#include "minidl/ops/attention_kernels.h"

namespace minidl {

enum class CudaAttention { Auto, CudaCores, TensorCores, Cudnn };

// "" and "auto", "cuda-cores", "tensor-cores", "cudnn"; anything else is an error naming the
// variable.
CudaAttention parse_cuda_attention(std::string_view value);

// MINIDL_CUDA_ATTENTION (unset: Auto), read once, at the first call.
CudaAttention selected_cuda_attention();

// cuda::attention_forward_tensor_cores and cuda::attention_backward_tensor_cores, which refuse
// a problem that does not fit; null entries in a build without CUDA.
const AttentionKernels& tensor_core_attention_kernels();

// cuda::attention_forward_cudnn and cuda::attention_backward_cudnn, which refuse a problem that
// does not fit, and say how to build them in a build without the cuDNN frontend; null entries
// in a build without CUDA.
const AttentionKernels& cudnn_attention_kernels();

// cuda::cuda_core_attention_kernels: the CUDA-core kernels whatever MINIDL_CUDA_ATTENTION
// says; null entries in a build without CUDA.
const AttentionKernels& cuda_core_attention_kernels();

// cuda::tensor_core_attention_fits; false in a build without CUDA.
bool tensor_core_attention_fits(const AttentionParams& params,
                                std::initializer_list<const Tensor*> operands);

// cuda::cudnn_attention_fits; false in a build without CUDA or without the cuDNN frontend.
bool cudnn_attention_fits(const AttentionParams& params,
                          std::initializer_list<const Tensor*> operands, AttentionPass pass);

// cuda::cudnn_attention_built: whether this build has the cuDNN attention.
bool cudnn_attention_built();

}  // namespace minidl
