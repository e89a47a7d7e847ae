// Placeholders until the real implementation lands; this file is deleted then.
#include "ops/loss.h"

namespace minidl {

Tensor softmax(const Tensor& x, int64_t dim) { MINIDL_CHECK(false, "softmax: not implemented yet"); return {}; }
Tensor log_softmax(const Tensor& x, int64_t dim) { MINIDL_CHECK(false, "log_softmax: not implemented yet"); return {}; }
Tensor cross_entropy(const Tensor& logits, const Tensor& target,                      Reduction reduction, double label_smoothing) { MINIDL_CHECK(false, "cross_entropy: not implemented yet"); return {}; }
Tensor nll_loss(const Tensor& log_probs, const Tensor& target,                 Reduction reduction) { MINIDL_CHECK(false, "nll_loss: not implemented yet"); return {}; }
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) { MINIDL_CHECK(false, "mse_loss: not implemented yet"); return {}; }

}  // namespace minidl
