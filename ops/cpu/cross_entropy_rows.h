#pragma once
// The float rows of the CPU cross-entropy (ops/cpu/loss.cpp), a row of contiguous logits at a
// time, written for the vectoriser: ops/cpu/vectorisable_math.h's exp instead of glibc's scalar
// expf (the forward's and backward's 4096 x 256 logits of the GPT's step took 1.7 and 1.2 ms on
// it), the row's maximum and sum in 16 lanes (ops/cpu/row_lanes.h). Compiled for baseline x86-64,
// AVX2 and AVX-512, with the same bits (Note [Loops compiled for AVX-512 and AVX2]).
#include <cstdint>

#include "minidl/ops/cpu/row_lanes.h"

namespace minidl::cpu {

// log(sum_c exp(x[c])), as max + log(sum_c exp(x[c] - max)).
float log_sum_exp_row(const float* x, int64_t classes, LoopVersion version = LoopVersion::Best);

// grad[c] = row_grad * (exp(x[c] - lse) - wanted_c), wanted_c = (1 - s) [c == target] + s / C
// (ops/loss_math.h) with s = smoothing.
void cross_entropy_grad_row(const float* x, int64_t classes, float lse, int64_t target,
                            float smoothing, float row_grad, float* grad,
                            LoopVersion version = LoopVersion::Best);

}  // namespace minidl::cpu
