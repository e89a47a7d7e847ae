#pragma once
// The math of cross-entropy with label smoothing, written once for the CPU loops
// (ops/cpu/loss.cpp) and the CUDA kernels (ops/cuda/loss.cu). With s the smoothing, C the
// classes, lse a row's log-sum-exp and t its target, PyTorch's loss is
//   (1 - s) * (lse - x_t) + s * (lse - mean(x)) = lse - (1 - s) * x_t - s * sum(x) / C
// and its gradient by logit c is softmax_c - wanted_c, wanted_c = (1 - s) [c == t] + s / C.
// Acc is float (double for float64 logits on the CPU).
#include <cstdint>

#include "minidl/core/macros.h"

namespace minidl::loss_math {

// The loss of one row (not ignored, its target in range).
template <class Acc>
MINIDL_HOST_DEVICE Acc smoothed_cross_entropy(Acc lse, Acc target_logit, Acc logit_sum,
                                              Acc smoothing, int64_t classes) {
  return lse - (Acc(1) - smoothing) * target_logit -
         smoothing * logit_sum / static_cast<Acc>(classes);
}

// wanted_c, with off_target = s / C computed once per row or launch.
template <class Acc>
MINIDL_HOST_DEVICE Acc smoothed_target(bool is_target, Acc smoothing, Acc off_target) {
  return (is_target ? Acc(1) - smoothing : Acc(0)) + off_target;
}

}  // namespace minidl::loss_math
