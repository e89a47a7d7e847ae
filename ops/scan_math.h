#pragma once
// The scan of one line (`size` elements `stride` apart), written once as MINIDL_HOST_DEVICE
// functions for the CPU kernels (ops/cpu/scan.cpp) and the CUDA kernels (ops/cuda/scan.cu), so
// both backends add and multiply in the same order and type.
//
// Note [Cumprod gradient with zeros]
//   out[j] = x[0] * ... * x[j], so d out[j] / d x[k] = the product of x[i] over i <= j, i != k
//   (for j >= k). Dividing out[j] by x[k], the usual shortcut, fails where x[k] is 0. With z the
//   first zero of the line (size when there is none):
//   - k < z: every term j >= z holds the factor x[z] = 0, so
//       grad[k] = (g[k] out[k] + ... + g[z-1] out[z-1]) / x[k], and x[k] != 0;
//   - k = z: grad[z] = sum over j >= z of g[j] * (x[0] ... x[z-1]) * (x[z+1] ... x[j]);
//   - k > z: every term holds x[z] = 0, so grad[k] = 0.
//   That is one pass forward and one backward per line, and matches PyTorch's cumprod and prod
//   gradients (which take the same cases).
#include <cstdint>
#include <type_traits>

#include "minidl/core/half.h"
#include "minidl/core/macros.h"

namespace minidl::scan_math {

// What a line accumulates in: float for float32 and the 16-bit floats (rounded to T at each
// output), double for float64, int64 for int64.
template <class T>
using Accumulate =
    std::conditional_t<std::is_same_v<T, double> || std::is_same_v<T, int64_t>, T, float>;

template <class T>
MINIDL_HOST_DEVICE void cumsum_line(T* out, const T* input, int64_t size, int64_t stride,
                                    bool reverse) {
  Accumulate<T> sum = 0;
  for (int64_t n = 0; n < size; ++n) {
    const int64_t k = (reverse ? size - 1 - n : n) * stride;
    sum += static_cast<Accumulate<T>>(input[k]);
    out[k] = static_cast<T>(sum);
  }
}

template <class T>
MINIDL_HOST_DEVICE void cumprod_line(T* out, const T* input, int64_t size, int64_t stride) {
  Accumulate<T> product = 1;
  for (int64_t k = 0; k < size; ++k) {
    product *= static_cast<Accumulate<T>>(input[k * stride]);
    out[k * stride] = static_cast<T>(product);
  }
}

// grad_input = the gradient of cumprod_line(input) for the output gradient `grad`, by the cases
// of Note [Cumprod gradient with zeros]. grad_input holds g[j] * out[j] between the two passes.
template <class T>
MINIDL_HOST_DEVICE void cumprod_backward_line(T* grad_input, const T* grad, const T* input,
                                              int64_t size, int64_t stride) {
  using A = Accumulate<T>;
  // Forward: out[j] up to the first zero, and g[j] * out[j] for j < z.
  int64_t first_zero = size;
  A product_before_zero = 1;
  for (int64_t j = 0; j < size; ++j) {
    const A x = static_cast<A>(input[j * stride]);
    if (x == A(0)) {
      first_zero = j;
      break;
    }
    product_before_zero *= x;
    grad_input[j * stride] = static_cast<T>(static_cast<A>(grad[j * stride]) * product_before_zero);
  }
  // Backward over k < z: the running sum of g[j] * out[j] for k <= j < z, divided by x[k].
  A tail = 0;
  for (int64_t k = first_zero - 1; k >= 0; --k) {
    tail += static_cast<A>(grad_input[k * stride]);
    grad_input[k * stride] = static_cast<T>(tail / static_cast<A>(input[k * stride]));
  }
  if (first_zero == size) return;
  // k = z: (x[0] ... x[z-1]) times each later g[j] with the factors x[z+1] ... x[j].
  A factors_after_zero = product_before_zero, sum = 0;
  for (int64_t j = first_zero; j < size; ++j) {
    if (j > first_zero) factors_after_zero *= static_cast<A>(input[j * stride]);
    sum += static_cast<A>(grad[j * stride]) * factors_after_zero;
  }
  grad_input[first_zero * stride] = static_cast<T>(sum);
  for (int64_t k = first_zero + 1; k < size; ++k) grad_input[k * stride] = T{};
}

}  // namespace minidl::scan_math
