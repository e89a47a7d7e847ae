#pragma once
// Softmax and the losses, on logits as PyTorch does. Always computed in float32 or wider.
#include "minidl/core/tensor.h"

namespace minidl {

enum class Reduction { None, Mean, Sum };

Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);

// logits [N, C], target int64 [N] of class indices in [0, C). With label_smoothing s the target
// distribution is (1 - s) * one_hot + s / C, as torch.nn.functional.cross_entropy. Rows whose
// target is ignore_index (-100 by default, as PyTorch) add nothing: loss 0, gradient 0, and a
// mean divides by the other rows only (NaN when every row is ignored, as PyTorch). One fused
// kernel (log-softmax and the loss) forward and backward on CUDA. Another target outside
// [0, C) is an error on the CPU; on CUDA (where checking would synchronise) it makes that row's
// loss NaN.
Tensor cross_entropy(const Tensor& logits, const Tensor& target,
                     Reduction reduction = Reduction::Mean, double label_smoothing = 0.0,
                     int64_t ignore_index = -100);
// log_probs [N, C], target int64 [N] (ignore_index and out-of-range targets as for
// cross_entropy).
Tensor nll_loss(const Tensor& log_probs, const Tensor& target,
                Reduction reduction = Reduction::Mean, int64_t ignore_index = -100);
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);

}  // namespace minidl
