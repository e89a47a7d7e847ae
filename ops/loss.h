#pragma once
// Softmax and the losses, on logits as PyTorch does. Always computed in float32 or wider.
#include "core/tensor.h"

namespace minidl {

enum class Reduction { None, Mean, Sum };

Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);

// logits [N, C], target int64 [N] of class indices in [0, C). With label_smoothing s the target
// distribution is (1 - s) * one_hot + s / C, as torch.nn.functional.cross_entropy. One fused
// kernel (log-softmax and the loss) forward and backward on CUDA.
Tensor cross_entropy(const Tensor& logits, const Tensor& target,
                     Reduction reduction = Reduction::Mean, double label_smoothing = 0.0);
// log_probs [N, C], target int64 [N].
Tensor nll_loss(const Tensor& log_probs, const Tensor& target,
                Reduction reduction = Reduction::Mean);
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);

}  // namespace minidl
