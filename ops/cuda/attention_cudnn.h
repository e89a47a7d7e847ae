#pragma once
// The CUDA attention on cuDNN's fused scaled dot-product attention (SDPA), built through the
// graph API of NVIDIA's cuDNN frontend (ops/cuda/attention_cudnn.cpp), for float16 and
// bfloat16; ops/cuda/attention.cu's entry points call it first where the problem fits (the
// automatic choice) or when MINIDL_CUDA_ATTENTION=cudnn (ops/cuda_attention_implementations.h).
// Same interface and conventions as AttentionKernels (ops/attention_kernels.h): cuDNN's softmax
// statistics are the natural-log logsumexp [B, H, T] in float32 that the other implementations
// save, so either direction may run on another implementation than the other.
//
// A build without the frontend's headers (CMakeLists.txt, MINIDL_CUDNN_FRONTEND) has
// ops/cuda/attention_without_cudnn.cpp instead: cudnn_attention_built() is false, nothing fits,
// and the entry points say how to build it.
#include <cstddef>
#include <initializer_list>

#include "minidl/core/tensor.h"
#include "minidl/ops/attention_kernels.h"

namespace minidl::cuda {

// Whether this build has the cuDNN attention (configured with the cuDNN frontend's headers).
bool cudnn_attention_built();

// Whether cuDNN takes this pass of this problem: float16 or bfloat16, no dropout, no attn_mask
// (is_causal is fine), D and Dv multiples of 8, T and S not 0, every tensor of `operands`
// 16-byte aligned, and cuDNN builds an execution plan for it (asked once per shape, pass, dtype
// and thread, then cached; the backward asks for a deterministic algorithm). Anything else runs
// on another implementation.
bool cudnn_attention_fits(const AttentionParams& params,
                          std::initializer_list<const Tensor*> operands, AttentionPass pass);

// The automatic choice's form of cudnn_attention_fits: a problem whose plan is not built yet
// fits only where building one is harmless: not during a CUDA graph capture (the driver refuses
// to load kernels then), and while fewer than kAutomaticPlans plans exist. A model meets one or
// two shapes per pass in training; generation with a growing context meets one per length,
// and building a plan for each would cost far more than it saves, so those go elsewhere.
inline constexpr size_t kAutomaticPlans = 32;
bool cudnn_attention_fits_automatically(const AttentionParams& params,
                                        std::initializer_list<const Tensor*> operands,
                                        AttentionPass pass);

// AttentionKernels::forward and ::backward on cuDNN; an error naming cuDNN's reason where the
// problem does not fit (tests call these directly, so a misfit cannot fall back unnoticed).
void attention_forward_cudnn(const Tensor& out, const Tensor& logsumexp, const Tensor& query,
                             const Tensor& key, const Tensor& value, const Tensor& mask,
                             const AttentionParams& params);
void attention_backward_cudnn(const Tensor& grad_query, const Tensor& grad_key,
                              const Tensor& grad_value, const Tensor& grad_out, const Tensor& query,
                              const Tensor& key, const Tensor& value, const Tensor& out,
                              const Tensor& logsumexp, const Tensor& mask,
                              const AttentionParams& params);

}  // namespace minidl::cuda
