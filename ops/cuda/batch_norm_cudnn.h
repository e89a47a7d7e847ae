#pragma once
// Batch norm's training step on cuDNN's persistent NHWC kernels
// (cudnnBatchNormalizationForwardTrainingEx and cudnnBatchNormalizationBackwardEx,
// CUDNN_BATCHNORM_SPATIAL_PERSISTENT, the path PyTorch takes for channels-last inputs): the
// alternative to minidl's kernels that MINIDL_CUDA_BATCH_NORM=cudnn selects
// (ops/cuda_batch_norm_implementations.h). batch_norm_relu's ReLU, and its residual's sum, run
// inside cuDNN's kernels (CUDNN_BATCHNORM_OPS_BN_ACTIVATION and ..._BN_ADD_ACTIVATION) where
// cuDNN takes them for the dtype; where it refuses, the step is cuDNN's plain batch norm and the
// caller adds and rectifies beside it, as after oneDNN on the CPU.
//
// cuDNN documents that the persistent mode may overflow where the batch's values reach extreme
// ranges (cudnnQueryRuntimeError reports it); minidl does not query it, one more reason this is
// an opt-in.
//
// Semantics are batch_norm's (ops/norm.h): the biased variance normalises, the unbiased one
// enters the running variance with `momentum`, as cuDNN and PyTorch do. cuDNN's results are
// not minidl's bits, and its persistent kernels do not promise the same bits twice, so
// ops/norm.cpp does not call these in deterministic mode.
//
// Declared in every build, defined in CUDA builds only (ops/norm.cpp names them in branches a
// CPU-only build discards).
#include <cstddef>
#include <optional>

#include "minidl/core/tensor.h"

namespace minidl::cuda {

// What cuDNN's kernels did in the forward pass, and so what its backward pass does.
enum class CudnnBatchNormOps { Normalize, NormalizeRelu, NormalizeAddRelu };

// What the backward pass needs of the forward's: the batch's statistics as cuDNN saved them
// ([C] float32, the mean and 1 / sqrt(biased variance + eps)) and its reserve space (bytes it
// keeps for backward, such as the ReLU's mask: reserve_bytes of them, in a buffer of at least
// one byte).
struct CudnnBatchNormSaved {
  Tensor mean, invstd, reserve;
  size_t reserve_bytes = 0;
  CudnnBatchNormOps ops = CudnnBatchNormOps::Normalize;
};

struct CudnnBatchNormForward {
  Tensor out;  // x's dtype, dense channels-last
  CudnnBatchNormSaved saved;
};

// Whether cuDNN's step takes x: a CUDA [N, C, H, W] tensor of float16, bfloat16 or float32,
// dense channels-last, at most 2^31 - 1 elements; weight and bias defined [C] float32.
bool cudnn_batch_norm_fits(const Tensor& x, const Tensor& weight, const Tensor& bias);

// out = the normalised x, and with `relu` relu(out + residual) where saved.ops says cuDNN did
// that (residual undefined, or of x's shape and dtype); running_mean and running_var ([C]
// float32, contiguous) updated with `momentum`. cuDNN is asked for the fused forms only where it
// documents them (float16, channels a multiple of 4); a fused form it fails falls back to the
// plain one. nullopt, with the running statistics untouched, where cuDNN does not take even its
// plain batch norm for this dtype and channel count (said once): minidl's kernels run it then.
// Throws on any other cuDNN failure.
std::optional<CudnnBatchNormForward> cudnn_batch_norm_forward(
    const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
    const Tensor& running_var, double momentum, double eps, const Tensor& residual, bool relu);

struct CudnnBatchNormGradients {
  Tensor input;     // x's dtype, channels-last
  Tensor weight;    // [C] float32
  Tensor bias;      // [C] float32
  Tensor residual;  // NormalizeAddRelu only: the residual's gradient
};

// The backward of that step. grad_output is the gradient of the forward's output: for
// NormalizeRelu and NormalizeAddRelu, of the ReLU's output (cuDNN applies the mask, from `out`,
// the forward's output, and `bias`); for Normalize, of the normalised x (out and bias unused).
CudnnBatchNormGradients cudnn_batch_norm_backward(const Tensor& grad_output, const Tensor& x,
                                                  const Tensor& out, const Tensor& weight,
                                                  const Tensor& bias,
                                                  const CudnnBatchNormSaved& saved, double eps);

}  // namespace minidl::cuda
