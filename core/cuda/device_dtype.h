#pragma once
// The dtype visitors of core/dtype.h without float64, for CUDA launchers: float64 tensors
// exist on the CPU only (factories refuse them on a device), so a kernel is never
// instantiated for double, and a float64 tensor that reaches a launcher is a bug in minidl.
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "minidl/core/dtype.h"
#include "minidl/core/error.h"

namespace minidl::cuda {

// visit_dtype without float64.
template <class Fn>
void visit_device_dtype(DType dtype, Fn&& fn) {
  visit_dtype(dtype, [&](auto zero) {
    if constexpr (std::is_same_v<decltype(zero), double>)
      MINIDL_INTERNAL_ASSERT(false, "a float64 tensor on a CUDA device");
    else
      fn(zero);
  });
}

// visit_floating without float64; `op` names the op in the error for a non-floating dtype.
template <class Fn>
void visit_device_floating(DType dtype, std::string_view op, Fn&& fn) {
  visit_floating(dtype, op, [&](auto zero) {
    if constexpr (std::is_same_v<decltype(zero), double>)
      MINIDL_INTERNAL_ASSERT(false, "a float64 tensor on a CUDA device");
    else
      fn(zero);
  });
}

// Calls fn(Word{}) with the unsigned integer as wide as `dtype`'s elements: for kernels that
// only move elements (gathers, assigning scatters), whatever their dtype.
template <class Fn>
void visit_element_width(DType dtype, Fn&& fn) {
  switch (element_size(dtype)) {
    case 1: return fn(uint8_t{});
    case 2: return fn(uint16_t{});
    case 4: return fn(uint32_t{});
    case 8: return fn(uint64_t{});
    default: MINIDL_INTERNAL_ASSERT(false, "no word type for elements of dtype ", dtype);
  }
}

}  // namespace minidl::cuda
