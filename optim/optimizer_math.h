#pragma once
// What the optimizers' element functors (each in its optimizer's header: optim/sgd.h, ...)
// share: the table lists every optimizer uses, the accumulate type,
// rounding to the parameter's dtype where PyTorch stores a tensor, and PyTorch's lerp.
//
// Table lists (Note [Multi-tensor apply] in ops/multi_tensor_table.h) of every optimizer built on
// optim/multi_tensor_optimizer.h: list 0 is the parameter, list 1 its gradient (in the
// parameter's layout), lists 2... the optimizer's state tensors in the order of its
// state_lists(). An entry's flags has bit `list` set when that state tensor was made by this
// step (so it holds zeros, or nothing yet).
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "minidl/core/half.h"
#include "minidl/core/macros.h"
#include "minidl/ops/multi_tensor_table.h"

namespace minidl::optim {

inline constexpr int kParamList = 0;
inline constexpr int kGradList = 1;
inline constexpr int kFirstStateList = 2;
inline constexpr int kMaxStateLists = kMaxTensorLists - kFirstStateList;

// Whether the state tensor of list `list` was made by this step.
MINIDL_HOST_DEVICE bool made_this_step(const TensorListEntry& entry, int list) {
  return (entry.flags & (int32_t{1} << list)) != 0;
}

// PyTorch's "opmath" type: float for float32, float16 and bfloat16 parameters, double for
// float64. Arithmetic runs in it; Python scalars (lr, betas, ...) are converted to it once.
template <class T>
using opmath_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// `value` rounded to T and back: the identity for float and double. Used where PyTorch's
// single-tensor step materialises a tensor in the parameter's dtype (an in-place op's result, a
// temporary), which matters only for 16-bit parameters.
template <class T, class Acc>
MINIDL_HOST_DEVICE Acc round_through(Acc value) {
  if constexpr (std::is_same_v<T, Acc>)
    return value;
  else
    return static_cast<Acc>(T(value));
}

// torch.lerp(start, end, weight) as ATen computes it (ATen/native/Lerp.h): from the nearer end,
// so a small weight keeps start's precision.
template <class Acc>
MINIDL_HOST_DEVICE Acc lerp(Acc start, Acc end, Acc weight) {
  return (weight < Acc(0.5) && weight > Acc(-0.5)) ? start + weight * (end - start)
                                                   : end - (end - start) * (Acc(1) - weight);
}

// The correctly rounded square root in Acc (float or double), on both backends.
template <class Acc>
MINIDL_HOST_DEVICE Acc square_root(Acc x) {
  if constexpr (std::is_same_v<Acc, float>)
    return ::sqrtf(x);
  else
    return ::sqrt(x);
}

// torch.maximum: NaN when either is NaN (a NaN `a` fails a < b and is kept), else std::max.
// One select, not branches, so CPU loops using it vectorise.
template <class Acc>
MINIDL_HOST_DEVICE Acc maximum(Acc a, Acc b) {
  return ((a < b) | (b != b)) ? b : a;
}

}  // namespace minidl::optim
