#pragma once
// Which kernels run batch norm's training steps on CUDA, in any build:
//   minidl  ops/cuda/norm.cu: minidl's own kernels, every dtype and layout, deterministic
//           (the default)
//   cudnn   ops/cuda/batch_norm_cudnn.h: cuDNN's persistent NHWC batch norm, with
//           batch_norm_relu's ReLU and residual sum inside its kernels where cuDNN takes them;
//           for channels-last 16-bit and float32 inputs with affine parameters and running
//           statistics, and not in deterministic mode (set_cudnn_deterministic, ops/conv.h),
//           where minidl's kernels run instead
// MINIDL_CUDA_BATCH_NORM names one ("minidl" or "cudnn"; unset: minidl), read at the first
// step; set_cuda_batch_norm overrides it. Issue 29 measures the two side by side (the GPU kit's
// bench stage) before the default changes.
#include <string_view>

namespace minidl {

enum class CudaBatchNorm { Minidl, Cudnn };

// "" and "minidl", "cudnn"; anything else is an error naming the variable.
CudaBatchNorm parse_cuda_batch_norm(std::string_view value);

// MINIDL_CUDA_BATCH_NORM (unset: Minidl), or what set_cuda_batch_norm chose since.
CudaBatchNorm cuda_batch_norm();
void set_cuda_batch_norm(CudaBatchNorm implementation);

}  // namespace minidl
