// The vectorisable rows of the CPU cross-entropy (ops/cpu/cross_entropy_rows.h).
#include "minidl/ops/cpu/cross_entropy_rows.h"

#include <cmath>

#include "minidl/ops/cpu/vector_versions.h"
#include "minidl/ops/cpu/vectorisable_math.h"
#include "minidl/ops/loss_math.h"

namespace minidl::cpu {

namespace {

inline float log_sum_exp(const float* x, int64_t classes) {
  const float max = max_of(x, classes);
  float lanes[kLanes] = {};
  int64_t c = 0;
  for (; c + kLanes <= classes; c += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) lanes[l] += vectorisable_exp(x[c + l] - max);
  for (int64_t l = 0; c + l < classes; ++l) lanes[l] += vectorisable_exp(x[c + l] - max);
  return max + std::log(sum_of_lanes(lanes));
}

inline void grad_row(const float* x, int64_t classes, float lse, int64_t target, float smoothing,
                     float row_grad, float* grad) {
  const float off_target = smoothing / static_cast<float>(classes);
  for (int64_t c = 0; c < classes; ++c) {
    const float wanted = loss_math::smoothed_target(c == target, smoothing, off_target);
    grad[c] = row_grad * (vectorisable_exp(x[c] - lse) - wanted);
  }
}

MINIDL_AVX512 float log_sum_exp_avx512(const float* x, int64_t classes) {
  return log_sum_exp(x, classes);
}

MINIDL_AVX512 void grad_row_avx512(const float* x, int64_t classes, float lse, int64_t target,
                                   float smoothing, float row_grad, float* grad) {
  grad_row(x, classes, lse, target, smoothing, row_grad, grad);
}

MINIDL_AVX2 float log_sum_exp_avx2(const float* x, int64_t classes) {
  return log_sum_exp(x, classes);
}

MINIDL_AVX2 void grad_row_avx2(const float* x, int64_t classes, float lse, int64_t target,
                               float smoothing, float row_grad, float* grad) {
  grad_row(x, classes, lse, target, smoothing, row_grad, grad);
}

}  // namespace

float log_sum_exp_row(const float* x, int64_t classes, LoopVersion version) {
  if (runs_avx512(version)) return log_sum_exp_avx512(x, classes);
  if (runs_avx2(version)) return log_sum_exp_avx2(x, classes);
  return log_sum_exp(x, classes);
}

void cross_entropy_grad_row(const float* x, int64_t classes, float lse, int64_t target,
                            float smoothing, float row_grad, float* grad, LoopVersion version) {
  if (runs_avx512(version))
    grad_row_avx512(x, classes, lse, target, smoothing, row_grad, grad);
  else if (runs_avx2(version))
    grad_row_avx2(x, classes, lse, target, smoothing, row_grad, grad);
  else
    grad_row(x, classes, lse, target, smoothing, row_grad, grad);
}

}  // namespace minidl::cpu
