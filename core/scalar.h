#pragma once
// A number passed to an op, as LibTorch's c10::Scalar: its value and the kind of C++ number it
// was written as, which is what PyTorch's type promotion reads (core/type_promotion.h). An int64
// tensor + 2 stays int64, + 2.0 (a double) is float32, a bool tensor + 1 is int64.
//
// Every C++ arithmetic type converts implicitly: bool is a bool scalar, every other integer type
// an integer scalar (int64), float and double a floating-point one. The value is kept as a
// double, which holds every integer up to 2^53 exactly.
#include <type_traits>

#include "minidl/core/dtype.h"

namespace minidl {

class Scalar {
 public:
  template <class T>
  requires std::is_arithmetic_v<T> Scalar(T value)  // implicit, as c10::Scalar
      : value_(static_cast<double>(value)),
        type_(std::is_same_v<T, bool> ? kBool : (std::is_integral_v<T> ? kInt64 : kFloat64)) {}

  double to_double() const { return value_; }
  // kBool, kInt64 or kFloat64, as c10::Scalar::type().
  DType type() const { return type_; }
  bool is_floating_point() const { return type_ == kFloat64; }
  bool is_integral() const { return type_ == kInt64; }  // bool is not integral here
  bool is_bool() const { return type_ == kBool; }

 private:
  double value_;
  DType type_;
};

}  // namespace minidl
