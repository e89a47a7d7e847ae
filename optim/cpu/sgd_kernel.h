#pragma once
// The CPU SGD update of one parameter (the math is in optim/sgd_math.h).
#include "minidl/core/tensor.h"
#include "minidl/optim/sgd_math.h"

namespace minidl::cpu {

// Updates `param` (float32, float64, float16 or bfloat16) from `grad`, and `momentum_buffer`
// unless `buffer_state` is kNone (then it may be undefined). All three have the same sizes and
// strides and are dense (their elements fill numel() consecutive slots in some order), so the
// loop runs over memory, split across minidl's CPU threads.
void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                const optim::SgdGroupParameters& group, optim::MomentumBufferState buffer_state);

}  // namespace minidl::cpu
