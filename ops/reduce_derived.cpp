// Reductions built from the kernel-backed ones (ops/reduce.cpp) and element-wise ops, so that
// both backends and the backward come with them: amax, amin, logsumexp, std, any, all.
#include <cmath>
#include <vector>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/elementwise_op.h"
#include "minidl/ops/reduce.h"

namespace minidl {

namespace {

// x with the dims to reduce (wrapped; an empty list: every dim) moved last and flattened into
// one, [kept..., reduced], and the result's sizes with and without keepdim.
struct Folded {
  Tensor x;
  Shape kept_sizes;
  Shape keepdim_sizes;
};

Folded fold_reduced(const Tensor& x, const Shape& dims, const char* op) {
  check_defined(x, op, "input");
  const auto ndim = static_cast<size_t>(x.dim());
  std::vector<bool> reduced(ndim, dims.empty());
  for (int64_t dim : dims) {
    const auto wrapped = static_cast<size_t>(wrap_dim(dim, x.dim(), op));
    MINIDL_CHECK(!reduced[wrapped], op, ": dim ", dim, " appears more than once in ", dims);
    reduced[wrapped] = true;
  }
  Shape order, kept, keepdim_sizes;
  int64_t count = 1;
  for (size_t i = 0; i < ndim; ++i) {
    const int64_t size = x.size(static_cast<int64_t>(i));
    keepdim_sizes.push_back(reduced[i] ? 1 : size);
    if (reduced[i]) continue;
    order.push_back(static_cast<int64_t>(i));
    kept.push_back(size);
  }
  for (size_t i = 0; i < ndim; ++i)
    if (reduced[i]) {
      order.push_back(static_cast<int64_t>(i));
      count *= x.size(static_cast<int64_t>(i));
    }
  Shape folded_sizes = kept;
  folded_sizes.push_back(count);
  return {x.permute(order).reshape(folded_sizes), kept, keepdim_sizes};
}

// `reduced` ([kept..., 1] or [kept...]) in the result shape asked for.
Tensor unfold_result(const Tensor& reduced, const Folded& folded, bool keepdim) {
  return reduced.reshape(keepdim ? folded.keepdim_sizes : folded.kept_sizes);
}

template <bool kLargest>
Tensor extreme_over(const Tensor& x, const Shape& dims, bool keepdim, const char* op) {
  const ProfileScope profile(op, {x});
  const Folded folded = fold_reduced(x, dims, op);
  MINIDL_CHECK(folded.x.size(-1) > 0, op, ": expected a non-empty reduction, got shape ", x.sizes(),
               " over dims ", dims);
  const Tensor values = std::get<0>(kLargest ? max(folded.x, -1, false) : min(folded.x, -1, false));
  return unfold_result(values, folded, keepdim);
}

// The bool tensor "x is not zero" (NaN is not zero, as in PyTorch's any and all).
Tensor nonzero_mask(const Tensor& x) { return x.dtype() == kBool ? x : ne(x, 0.0); }

}  // namespace

Tensor amax(const Tensor& x, const Shape& dims, bool keepdim) {
  return extreme_over<true>(x, dims, keepdim, "amax");
}
Tensor amin(const Tensor& x, const Shape& dims, bool keepdim) {
  return extreme_over<false>(x, dims, keepdim, "amin");
}

Tensor logsumexp(const Tensor& x, const Shape& dims, bool keepdim) {
  const ProfileScope profile("logsumexp", {x});
  elementwise::check_floating(x, "logsumexp");
  const Folded folded = fold_reduced(x, dims, "logsumexp");
  // Shifted by the (constant) row maximum so that exp cannot overflow; a row whose maximum is
  // infinite is shifted by 0 instead, so that -inf rows give -inf and +inf rows +inf.
  Tensor shift;
  {
    NoGradGuard no_grad;
    shift = std::get<0>(max(folded.x, -1, /*keepdim=*/true));
    shift = where(eq(abs(shift), INFINITY), 0.0, shift);
  }
  const Tensor out = log(sum(exp(folded.x - shift), {-1}, /*keepdim=*/true)) + shift;
  return unfold_result(out, folded, keepdim);
}

// std's own checks first, so that its errors name std rather than the var inside it.
void check_std_input(const Tensor& x, const Shape& dims) {
  check_defined(x, "std", "input");
  MINIDL_CHECK(x.is_floating_point(), "std: expected a floating-point tensor (float32, float64, ",
               "float16 or bfloat16), got ", dtype_name(x.dtype()));
  for (int64_t dim : dims) wrap_dim(dim, x.dim(), "std");
}

Tensor std(const Tensor& x, const Shape& dims, int64_t correction, bool keepdim) {
  const ProfileScope profile("std", {x});
  check_std_input(x, dims);
  return sqrt(var(x, dims, correction, keepdim));
}
Tensor std(const Tensor& x) {
  const ProfileScope profile("std", {x});
  check_std_input(x, {});
  return sqrt(var(x));
}

Tensor any(const Tensor& x, const Shape& dims, bool keepdim) {
  const ProfileScope profile("any", {x});
  const Folded folded = fold_reduced(x, dims, "any");
  return unfold_result(gt(sum(nonzero_mask(folded.x), {-1}), 0.0), folded, keepdim);
}
Tensor all(const Tensor& x, const Shape& dims, bool keepdim) {
  const ProfileScope profile("all", {x});
  const Folded folded = fold_reduced(x, dims, "all");
  const double count = static_cast<double>(folded.x.size(-1));
  return unfold_result(eq(sum(nonzero_mask(folded.x), {-1}), count), folded, keepdim);
}

}  // namespace minidl
