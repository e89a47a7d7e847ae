#pragma once
// Element types. Names follow LibTorch (kFloat32 == kFloat, kInt64 == kLong, ...).
// kFloat64 exists on CPU only; it is what gradient checks run in.
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string_view>

#include "minidl/core/error.h"
#include "minidl/core/half.h"

namespace minidl {

enum class DType : int8_t { Float32, Float64, Float16, BFloat16, Int32, Int64, UInt8, Bool };

inline constexpr DType kFloat32 = DType::Float32, kFloat = DType::Float32;
inline constexpr DType kFloat64 = DType::Float64, kDouble = DType::Float64;
inline constexpr DType kFloat16 = DType::Float16, kHalf = DType::Float16;
inline constexpr DType kBFloat16 = DType::BFloat16;
inline constexpr DType kInt32 = DType::Int32, kInt = DType::Int32;
inline constexpr DType kInt64 = DType::Int64, kLong = DType::Int64;
inline constexpr DType kUInt8 = DType::UInt8, kByte = DType::UInt8;
inline constexpr DType kBool = DType::Bool;

constexpr size_t element_size(DType dtype) {
  switch (dtype) {
    case DType::Float64:
    case DType::Int64: return 8;
    case DType::Float32:
    case DType::Int32: return 4;
    case DType::Float16:
    case DType::BFloat16: return 2;
    case DType::UInt8:
    case DType::Bool: return 1;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::UInt8: return "uint8";
    case DType::Bool: return "bool";
  }
  return "?";
}

constexpr bool is_floating_point(DType dtype) {
  return dtype == kFloat32 || dtype == kFloat64 || dtype == kFloat16 || dtype == kBFloat16;
}

inline std::ostream& operator<<(std::ostream& out, DType dtype) { return out << dtype_name(dtype); }

// C++ type <-> DType.
template <class T>
struct dtype_of;
template <>
struct dtype_of<float> {
  static constexpr DType value = kFloat32;
};
template <>
struct dtype_of<double> {
  static constexpr DType value = kFloat64;
};
template <>
struct dtype_of<Half> {
  static constexpr DType value = kFloat16;
};
template <>
struct dtype_of<BFloat16> {
  static constexpr DType value = kBFloat16;
};
template <>
struct dtype_of<int32_t> {
  static constexpr DType value = kInt32;
};
template <>
struct dtype_of<int64_t> {
  static constexpr DType value = kInt64;
};
template <>
struct dtype_of<uint8_t> {
  static constexpr DType value = kUInt8;
};
template <>
struct dtype_of<bool> {
  static constexpr DType value = kBool;
};
template <class T>
inline constexpr DType dtype_of_v = dtype_of<T>::value;

// Calls fn(T{}) with the C++ type of `dtype`. Used inside kernel files, never in headers that
// users include on hot paths.
template <class Fn>
decltype(auto) visit_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float32: return fn(float{});
    case DType::Float64: return fn(double{});
    case DType::Float16: return fn(Half{});
    case DType::BFloat16: return fn(BFloat16{});
    case DType::Int32: return fn(int32_t{});
    case DType::Int64: return fn(int64_t{});
    case DType::UInt8: return fn(uint8_t{});
    case DType::Bool: return fn(bool{});
  }
  MINIDL_INTERNAL_ASSERT(false, "unknown dtype");
}

// As visit_dtype, for ops defined on floating-point types only; `op` names the op in the error.
template <class Fn>
decltype(auto) visit_floating(DType dtype, std::string_view op, Fn&& fn) {
  switch (dtype) {
    case DType::Float32: return fn(float{});
    case DType::Float64: return fn(double{});
    case DType::Float16: return fn(Half{});
    case DType::BFloat16: return fn(BFloat16{});
    default:
      MINIDL_CHECK(false, op, ": expected a floating-point tensor (float32, float64, float16 or ",
                   "bfloat16), got ", dtype);
  }
  MINIDL_INTERNAL_ASSERT(false, "unreachable");
}

}  // namespace minidl
