#pragma once
// The kernel interface of softmax and the losses (ops/loss.cpp), implemented by
// ops/cpu/loss.cpp and ops/cuda/loss.cu; dispatched by kernels_for (Note [Kernel tables] in
// core/dispatch.h). Conventions:
// - softmax-family tensors are contiguous and viewed as [outer, C, inner]: the softmax runs
//   over C for each (outer, inner) pair. Outputs have the input's dtype and are overwritten.
// - "acc" tensors (per-row losses, logsumexp) are float32, or float64 for float64 inputs.
// - loss gradients arrive as grad_losses [N] in the input dtype, possibly with stride 0 (the
//   gradient of a reduced loss broadcast to every row), times `scale` (1/N for a mean).
// - targets are int64 [N]. A row whose target is ignore_index has loss 0 and gradient 0 (as
//   PyTorch's ignore_index). On the CPU the op layer has checked that every other target lies
//   in [0, C). On CUDA they stay on the device, unchecked by the host (that would synchronise):
//   a target outside [0, C) makes that row's loss and gradient NaN instead.
// - CUDA kernels run on the current stream of the tensors' device and never synchronise the
//   host.
#include "minidl/core/tensor.h"

namespace minidl {

struct LossKernels {
  void (*softmax)(const Tensor& out, const Tensor& x);
  void (*log_softmax)(const Tensor& out, const Tensor& x);
  // grad_input = output * (grad - sum_C(grad * output)), output being softmax's.
  void (*softmax_backward)(const Tensor& grad_input, const Tensor& grad, const Tensor& output);
  // grad_input = grad - exp(output) * sum_C(grad), output being log_softmax's.
  void (*log_softmax_backward)(const Tensor& grad_input, const Tensor& grad, const Tensor& output);

  // logits [N, C]: losses[i] = lse_i - (1 - s) * logits[i, t_i] - s * mean_c(logits[i, c]), with
  // lse_i = log(sum_c exp(logits[i, c])), kept in logsumexp[i] for the backward.
  void (*cross_entropy_forward)(const Tensor& losses, const Tensor& logsumexp, const Tensor& logits,
                                const Tensor& target, int64_t ignore_index, double label_smoothing);
  // grad_logits[i, c] = scale * grad_losses[i] * (softmax[i, c] - (1 - s) [c == t_i] - s / C).
  void (*cross_entropy_backward)(const Tensor& grad_logits, const Tensor& grad_losses, double scale,
                                 const Tensor& logits, const Tensor& target, int64_t ignore_index,
                                 const Tensor& logsumexp, double label_smoothing);

  // log_probs [N, C]: losses[i] = -log_probs[i, t_i].
  void (*nll_loss_forward)(const Tensor& losses, const Tensor& log_probs, const Tensor& target,
                           int64_t ignore_index);
  // grad_log_probs[i, c] = -scale * grad_losses[i] if c == t_i, else 0.
  void (*nll_loss_backward)(const Tensor& grad_log_probs, const Tensor& grad_losses, double scale,
                            const Tensor& target, int64_t ignore_index);

  static const LossKernels kCpu;
  static const LossKernels kCuda;
};

}  // namespace minidl
