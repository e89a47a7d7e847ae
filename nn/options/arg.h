#pragma once
// MINIDL_ARG(type, name) declares one field of an options struct with a chained setter and a
// getter, as LibTorch's TORCH_ARG, so options read as
//
//   nn::Conv2dOptions(3, 64, 3).stride(1).padding(1).bias(false)
//
// Used inside a struct: `MINIDL_ARG(int64_t, stride) = 1;` gives `stride(value)` (returns the
// struct) and `stride()` (the value), stored in `stride_`. The macro ends in a private section,
// so declare constructors before the fields.
#define MINIDL_ARG(T, name)                                \
 public:                                                   \
  auto name(const T& new_##name)->decltype(*this) {        \
    this->name##_ = new_##name;                            \
    return *this;                                          \
  }                                                        \
  const T& name() const noexcept { return this->name##_; } \
                                                           \
 private:                                                  \
  T name##_
