#pragma once
// The element-wise losses of torch.nn.functional: each compares input and target element by
// element, optionally weights the terms, and reduces them (ops/loss.h's Reduction). All are
// compositions of differentiable element-wise ops and reductions (ops/pointwise_loss.cpp), so
// they have gradients with respect to every tensor argument, as PyTorch's, and run on every
// backend. Under autocast they run in float32, as in PyTorch's autocast lists.
//
// minidl does no type promotion: input, target, weight and pos_weight share one floating dtype
// and one device.
#include "minidl/core/tensor.h"
#include "minidl/ops/loss.h"

namespace minidl {

// kl_div's reductions, as LibTorch's KLDivLossOptions::reduction_t: BatchMean divides the sum by
// the input's first size (the batch), which is the mathematical KL divergence; Mean divides by
// every element, as PyTorch's default does.
enum class KLDivReduction { None, BatchMean, Sum, Mean };

// -w [y log(sigmoid(x)) * pos_weight + (1 - y) log(1 - sigmoid(x))], from logits x, written
// as PyTorch's (1 - y) x + (1 + (pos_weight - 1) y) softplus(-x), which neither overflows nor
// loses the small terms. target has the input's shape; weight broadcasts to the input's shape,
// pos_weight with the target's (so pos_weight [C] weighs the classes of the last dim). Either may
// be undefined.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight = {}, const Tensor& pos_weight = {},
                                        Reduction reduction = Reduction::Mean);

// -w [y log(x) + (1 - y) log(1 - x)] for probabilities x, each log clamped at -100 as PyTorch's,
// so x = 0 or 1 gives a finite loss. target has the input's shape; weight broadcasts to it. On
// the CPU an input or target outside [0, 1] is an error, as PyTorch's; on CUDA (where checking
// would synchronise the host) it gives NaN. Under autocast on CUDA it is an error, as PyTorch's
// (use binary_cross_entropy_with_logits).
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                            Reduction reduction = Reduction::Mean);

// With z = |input - target| (the two broadcast together, as PyTorch's): 0.5 z^2 / beta where
// z < beta, else z - 0.5 beta; beta = 0 is the L1 loss; beta < 0 is an error.
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      Reduction reduction = Reduction::Mean, double beta = 1.0);

// With z = |input - target| (broadcast): 0.5 z^2 where z < delta, else delta (z - 0.5 delta);
// delta must be positive. huber_loss = delta * smooth_l1_loss with beta = delta.
Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                  double delta = 1.0);

// The pointwise KL divergence of log-probabilities `input` from `target`, broadcast together:
// target (log target - input), with 0 where target is 0 (xlogy), or with log_target,
// exp(target) (target - input).
Tensor kl_div(const Tensor& input, const Tensor& target,
              KLDivReduction reduction = KLDivReduction::Mean, bool log_target = false);

// |input - target| (broadcast together, as PyTorch's), reduced: torch.nn.functional.l1_loss.
// The gradient at input == target is 0 (sign(0)), as PyTorch's.
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);

}  // namespace minidl
