#pragma once
// The tensor-core implementation of the CUDA attention kernels (ops/cuda/attention_tensor_cores.cu)
// for float16 and bfloat16, which ops/cuda/attention.cu's entry points call when the
// environment selects it and the inputs fit. Same interface and conventions as
// AttentionKernels (ops/attention_kernels.h): either implementation's backward accepts the
// other's logsumexp.
//
// Opt-in: MINIDL_CUDA_ATTENTION=tensor-cores selects it (ops/cuda_attention_implementations.h).
// It stays opt-in until it has run on a GPU (docs/gpu.md, "Not run on a GPU yet").
#include <initializer_list>

#include "minidl/core/tensor.h"
#include "minidl/ops/attention_kernels.h"

namespace minidl::cuda {

// Whether the tensor-core kernels take this problem: float16 or bfloat16 on a device of compute
// capability 8.0 or later, no dropout, D and Dv multiples of 16 from 16 to 128, T and S not 0,
// at most 65535 (batch, head) pairs, and every tensor of `operands` 16-byte aligned (the tiles
// are loaded 16 bytes at a time). Anything else runs on the CUDA-core kernels.
bool tensor_core_attention_fits(const AttentionParams& params,
                                std::initializer_list<const Tensor*> operands);

// AttentionKernels::forward and ::backward on tensor cores; an error where the problem does not
// fit (tests call these directly, so a misfit cannot fall back unnoticed).
void attention_forward_tensor_cores(const Tensor& out, const Tensor& logsumexp, const Tensor& query,
                                    const Tensor& key, const Tensor& value, const Tensor& mask,
                                    const AttentionParams& params);
void attention_backward_tensor_cores(const Tensor& grad_query, const Tensor& grad_key,
                                     const Tensor& grad_value, const Tensor& grad_out,
                                     const Tensor& query, const Tensor& key, const Tensor& value,
                                     const Tensor& out, const Tensor& logsumexp, const Tensor& mask,
                                     const AttentionParams& params);

// The CUDA-core kernels of ops/cuda/attention.cu alone, whatever MINIDL_CUDA_ATTENTION says
// (AttentionKernels::kCuda chooses between the two); for tests that compare them.
const AttentionKernels& cuda_core_attention_kernels();

}  // namespace minidl::cuda
