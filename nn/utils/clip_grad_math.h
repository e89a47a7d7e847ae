#pragma once
// The arithmetic of clip_grad_norm_ and clip_grad_value_ (nn/utils/clip_grad.h), written once
// for the CPU loops (nn/utils/cpu/clip_grad.cpp) and the CUDA kernels (nn/utils/cuda/
// clip_grad.cu), so the CPU tests check the math the GPU runs.
//
// Note [Gradient norms as PyTorch computes them]
// torch.nn.utils.clip_grad_norm_ takes a norm per gradient (torch._foreach_norm, or
// linalg.vector_norm), each returned in the gradient's dtype, stacks them in the promoted dtype
// R of all gradients (float16 with bfloat16 promotes to float32) and takes the norm of that
// vector, in R. Both norms accumulate in the dtype's opmath type: float for float32, float16
// and bfloat16, double for float64 (Acc below). So here:
//   per gradient   n_i = T(root(sum_k term(g_k)))      in Acc of T, rounded to T
//   total          N   = R(root(sum_i term(n_i)))      in Acc of R, rounded to R
// with term(x) = x^2, |x| or |x|^p and root = sqrt, identity or ^(1/p) (p held in Acc), and
// for the inf norm term(x) = |x|, the sums maxima (NaN wins, as amax). Only the order of the
// additions differs from PyTorch's, so sums agree within rounding and maxima exactly.
// The coefficient is PyTorch's expression max_norm / (N + 1e-6) clamped to 1, evaluated as its
// tensor ops do: each op in Acc of R, rounded to R, with `scalar / tensor` as
// tensor.reciprocal() * scalar (torch.Tensor.__rdiv__), i.e.
//   coef = min(R(R(1 / R(N + 1e-6)) * max_norm), 1)
// (checked bit for bit against PyTorch for float32, float16, bfloat16 and float64 norms). Every
// gradient is multiplied by it, even when it is 1, as PyTorch does: g = T(Acc(g) * Acc(coef)),
// the coefficient converted to the gradient's Acc (a float32 gradient beside float64 ones is
// scaled in float, as PyTorch's mul_ does).
//
// The kernels walk multi-tensor tables (Note [Multi-tensor apply] in ops/multi_tensor_table.h),
// one per (device, dtype), whose list 0 is the gradients. The norm's sums are taken per chunk of
// the table (kMultiTensorChunkElements elements) into one partial each, and a tensor's partials
// are combined in chunk order, so a norm does not depend on the CPU's thread count.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "minidl/core/dtype.h"
#include "minidl/core/half.h"
#include "minidl/core/macros.h"
#include "minidl/ops/multi_tensor_table.h"

namespace minidl::nn::utils {

// What a dtype's norms and products accumulate in: double for double, float otherwise.
template <class T>
using clip_acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Which p-norm. A plain struct: CUDA kernels take it by value.
struct GradNormType {
  enum Kind : int32_t { kOne, kTwo, kInfinity, kOther };
  Kind kind = kTwo;
  double p = 2.0;  // the order itself (used by kOther)
};

namespace detail {

MINIDL_HOST_DEVICE float clip_sqrt(float x) {
#if defined(__CUDA_ARCH__)
  return sqrtf(x);
#else
  return std::sqrt(x);
#endif
}
MINIDL_HOST_DEVICE double clip_sqrt(double x) {
#if defined(__CUDA_ARCH__)
  return ::sqrt(x);
#else
  return std::sqrt(x);
#endif
}
MINIDL_HOST_DEVICE float clip_pow(float x, float y) {
#if defined(__CUDA_ARCH__)
  return powf(x, y);
#else
  return std::pow(x, y);
#endif
}
MINIDL_HOST_DEVICE double clip_pow(double x, double y) {
#if defined(__CUDA_ARCH__)
  return ::pow(x, y);
#else
  return std::pow(x, y);
#endif
}

}  // namespace detail

// The p-norm as a reduction over Acc: identity() and combine() as the block reductions of
// core/cuda/block_reduce.cuh expect them, term() for each element and root() at the end.
template <class Acc>
struct GradNormOp {
  GradNormType::Kind kind = GradNormType::kTwo;
  Acc p = 2;

  GradNormOp() = default;
  MINIDL_HOST_DEVICE explicit GradNormOp(const GradNormType& type)
      : kind(type.kind), p(static_cast<Acc>(type.p)) {}

  MINIDL_HOST_DEVICE Acc identity() const { return Acc(0); }
  MINIDL_HOST_DEVICE Acc term(Acc x) const {
    const Acc magnitude = x < Acc(0) ? -x : x;  // NaN stays NaN
    switch (kind) {
      case GradNormType::kTwo: return x * x;
      case GradNormType::kOther: return detail::clip_pow(magnitude, p);
      default: return magnitude;
    }
  }
  MINIDL_HOST_DEVICE Acc combine(Acc a, Acc b) const {
    if (kind != GradNormType::kInfinity) return a + b;
    return (a > b || a != a) ? a : b;  // a NaN on either side wins, as amax
  }
  MINIDL_HOST_DEVICE Acc root(Acc acc) const {
    switch (kind) {
      case GradNormType::kTwo: return detail::clip_sqrt(acc);
      case GradNormType::kOther: return detail::clip_pow(acc, Acc(1) / p);
      default: return acc;
    }
  }
};

// The coefficient every gradient is multiplied by, from the total norm (of dtype R), in Acc of
// R (see Note [Gradient norms as PyTorch computes them]).
template <class R>
MINIDL_HOST_DEVICE clip_acc_t<R> clip_coefficient(R total_norm, double max_norm) {
  using Acc = clip_acc_t<R>;
  const R shifted = R(static_cast<Acc>(total_norm) + static_cast<Acc>(1e-6));
  const R reciprocal = R(Acc(1) / static_cast<Acc>(shifted));
  const R coefficient = R(static_cast<Acc>(reciprocal) * static_cast<Acc>(max_norm));
  const Acc value = static_cast<Acc>(coefficient);
  return value > Acc(1) ? Acc(1) : value;  // NaN stays NaN, as torch.clamp
}

// grad[i] *= coefficient, in the gradient's Acc.
template <class T>
MINIDL_HOST_DEVICE void clip_scale_element(T* grad, int64_t i, clip_acc_t<T> coefficient) {
  grad[i] = T(static_cast<clip_acc_t<T>>(grad[i]) * coefficient);
}

// grad[i] clamped to [low, high] (clamp_min, then clamp_max); NaN stays NaN.
template <class T>
MINIDL_HOST_DEVICE void clip_clamp_element(T* grad, int64_t i, clip_acc_t<T> low,
                                           clip_acc_t<T> high) {
  const clip_acc_t<T> value = static_cast<clip_acc_t<T>>(grad[i]);
  if (value != value) return;
  const clip_acc_t<T> raised = value < low ? low : value;
  grad[i] = T(raised > high ? high : raised);
}

// x rounded to `dtype` (one a gradient can have), kept in Acc.
template <class Acc>
MINIDL_HOST_DEVICE Acc round_to_dtype(Acc x, DType dtype) {
  switch (dtype) {
    case DType::Float32: return static_cast<Acc>(static_cast<float>(x));
    case DType::Float16: return static_cast<Acc>(static_cast<float>(Half(static_cast<float>(x))));
    case DType::BFloat16:
      return static_cast<Acc>(static_cast<float>(BFloat16(static_cast<float>(x))));
    default: return x;
  }
}

// The norm of one tensor of `dtype` from the partials of its `count` chunks (in Acc of its
// dtype), rounded to its dtype: n_i of Note [Gradient norms as PyTorch computes them].
template <class Acc, class Partial>
MINIDL_HOST_DEVICE Acc tensor_norm_from_partials(const Partial* partials, int64_t count,
                                                 const GradNormOp<Acc>& op, DType dtype) {
  Acc acc = op.identity();
  for (int64_t k = 0; k < count; ++k) acc = op.combine(acc, static_cast<Acc>(partials[k]));
  return round_to_dtype(op.root(acc), dtype);
}

// ---- multi-tensor functors (ops/cpu/multi_tensor_apply.h states the convention) ----

// The group record of a gradient table, shared by its norm reduction and its scaling, so both
// launches read one upload.
struct ClipNormGroup {
  GradNormType norm_type;
  const void* coefficient = nullptr;  // the clip coefficient, on the table's device
  int32_t coefficient_is_double = 0;  // float64 (CPU, float64 norms), else float32
};

// Element i's term of the norm (a reduction functor: ops/cuda/multi_tensor_reduce.cuh).
template <class T>
class ClipNormTermOp {
 public:
  using Group = ClipNormGroup;
  using Acc = clip_acc_t<T>;
  MINIDL_HOST_DEVICE ClipNormTermOp(const Group& group, const TensorListEntry& entry)
      : grad_(static_cast<const T*>(entry.data[0])), op_(group.norm_type) {}
  MINIDL_HOST_DEVICE Acc identity() const { return op_.identity(); }
  MINIDL_HOST_DEVICE Acc combine(Acc a, Acc b) const { return op_.combine(a, b); }
  MINIDL_HOST_DEVICE Acc operator()(int64_t i) const {
    return op_.term(static_cast<Acc>(grad_[i]));
  }

 private:
  const T* grad_;
  GradNormOp<Acc> op_;
};

// grad *= the coefficient, read from the device once per tensor (CPU) or chunk (CUDA).
template <class T>
class ClipScaleOp {
 public:
  using Group = ClipNormGroup;
  MINIDL_HOST_DEVICE ClipScaleOp(const Group& group, const TensorListEntry& entry)
      : grad_(static_cast<T*>(entry.data[0])),
        coefficient_(
            group.coefficient_is_double
                ? static_cast<clip_acc_t<T>>(*static_cast<const double*>(group.coefficient))
                : static_cast<clip_acc_t<T>>(*static_cast<const float*>(group.coefficient))) {}
  MINIDL_HOST_DEVICE void operator()(int64_t i) const {
    clip_scale_element(grad_, i, coefficient_);
  }

 private:
  T* grad_;
  clip_acc_t<T> coefficient_;
};

struct ClipClampGroup {
  double clip_value = 0;
};

// grad clamped to [-clip_value, clip_value].
template <class T>
class ClipClampOp {
 public:
  using Group = ClipClampGroup;
  MINIDL_HOST_DEVICE ClipClampOp(const Group& group, const TensorListEntry& entry)
      : grad_(static_cast<T*>(entry.data[0])),
        low_(static_cast<clip_acc_t<T>>(-group.clip_value)),
        high_(static_cast<clip_acc_t<T>>(group.clip_value)) {}
  MINIDL_HOST_DEVICE void operator()(int64_t i) const { clip_clamp_element(grad_, i, low_, high_); }

 private:
  T* grad_;
  clip_acc_t<T> low_, high_;
};

}  // namespace minidl::nn::utils
