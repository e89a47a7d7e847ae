#pragma once
// The math of the reductions, written once for the CPU loops (ops/cpu/reduce.cpp) and the CUDA
// kernels (ops/cuda/reduce.cu).
//
// Conventions. Every reduction reads input elements converted to `Compute` (float for the
// 16-bit types, double for float64, int64 for integer sums) and folds them into its member
// type `Acc`:
//   Acc identity()                                  the empty reduction
//   Acc accumulate(Acc acc, Compute x, int64_t i)   adds element x found at reduced index i
//   Acc combine(Acc a, Acc b)                       merges two partial results
// combine is associative (up to rounding) and commutative (ties between equal extremes go to
// the smaller index whichever side they come from), so kernels may split a row anywhere and
// merge the pieces in any tree shape; each kernel fixes its tree, so results repeat exactly.
#include <cstdint>
#include <type_traits>

#include "minidl/core/half.h"
#include "minidl/core/macros.h"

namespace minidl::reduce_math {

// float for the 16-bit types, T otherwise.
template <class T>
using compute_t =
    std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

template <class T>
MINIDL_HOST_DEVICE bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>)
    return x != x;
  else
    return false;
}

// sum and mean: Acc is float (float64 for float64 inputs, int64 for integer and bool inputs).
template <class AccT>
struct SumOp {
  using Acc = AccT;

  MINIDL_HOST_DEVICE Acc identity() const { return Acc(0); }
  MINIDL_HOST_DEVICE Acc accumulate(Acc acc, Acc x, int64_t) const { return acc + x; }
  MINIDL_HOST_DEVICE Acc combine(Acc a, Acc b) const { return a + b; }
};

// A running extreme and the index where it was first seen. index < 0 marks the empty state.
template <class Value>
struct ValueIndex {
  Value value;
  int64_t index;
};

// max (kLargest) or min, with argmax/argmin. NaN wins over every number, as in PyTorch.
template <class Value, bool kLargest>
struct ExtremeOp {
  using Acc = ValueIndex<Value>;

  // Whether a is strictly preferable to b.
  static MINIDL_HOST_DEVICE bool better(Value a, Value b) {
    if (is_nan(a)) return !is_nan(b);
    return kLargest ? a > b : a < b;
  }
  static MINIDL_HOST_DEVICE bool same(Value a, Value b) {
    return a == b || (is_nan(a) && is_nan(b));
  }

  MINIDL_HOST_DEVICE Acc identity() const { return Acc{Value(0), -1}; }
  MINIDL_HOST_DEVICE Acc accumulate(Acc acc, Value x, int64_t i) const {
    return acc.index < 0 || better(x, acc.value) ? Acc{x, i} : acc;
  }
  MINIDL_HOST_DEVICE Acc combine(Acc a, Acc b) const {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    if (better(b.value, a.value)) return b;
    if (same(a.value, b.value) && b.index < a.index) return b;
    return a;
  }
};

// For var: the count and the sums of deviations from a shift, the first value seen. Shifting
// by a value from the data keeps sum_squares - sum^2 / count from cancelling when the mean is
// large next to the spread ("shifted data"), and unlike Welford's update it needs no division
// per element. Partial results merge with Chan et al.'s formula, into shift = mean, sum = 0.
template <class Value>
struct MomentsAcc {
  Value shift;
  Value sum;          // of (x - shift)
  Value sum_squares;  // of (x - shift)^2
  int64_t count;
};

template <class Value>
struct MomentsOp {
  using Acc = MomentsAcc<Value>;

  MINIDL_HOST_DEVICE Acc identity() const { return Acc{Value(0), Value(0), Value(0), 0}; }
  MINIDL_HOST_DEVICE Acc accumulate(Acc acc, Value x, int64_t) const {
    acc.shift = acc.count == 0 ? x : acc.shift;
    const Value deviation = x - acc.shift;
    acc.sum += deviation;
    acc.sum_squares += deviation * deviation;
    acc.count += 1;
    return acc;
  }
  MINIDL_HOST_DEVICE Acc combine(Acc a, Acc b) const {
    if (a.count == 0) return b;
    if (b.count == 0) return a;
    const int64_t count = a.count + b.count;
    const Value mean_a = a.sum / static_cast<Value>(a.count);  // relative to a.shift
    const Value mean_b = b.sum / static_cast<Value>(b.count);  // relative to b.shift
    const Value delta = (b.shift - a.shift) + (mean_b - mean_a);
    const Value b_share = static_cast<Value>(b.count) / static_cast<Value>(count);
    const Value m2 = squared_deviations(a) + squared_deviations(b) +
                     delta * delta * static_cast<Value>(a.count) * b_share;
    return Acc{a.shift + mean_a + delta * b_share, Value(0), m2, count};
  }
  // sum over the elements of (x - mean)^2.
  static MINIDL_HOST_DEVICE Value squared_deviations(const Acc& acc) {
    if (acc.count == 0) return Value(0);
    const Value m2 = acc.sum_squares - acc.sum * acc.sum / static_cast<Value>(acc.count);
    return m2 > Value(0) ? m2 : Value(0);  // rounding may leave a tiny negative
  }
  // Variance with `correction` subtracted from the count (Bessel: 1), as torch.var: a
  // non-positive denominator gives inf or NaN.
  static MINIDL_HOST_DEVICE Value variance(const Acc& acc, int64_t correction) {
    const int64_t dof = acc.count - correction;
    return squared_deviations(acc) / static_cast<Value>(dof > 0 ? dof : 0);
  }
};

}  // namespace minidl::reduce_math
