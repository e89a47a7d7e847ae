#pragma once
// MINIDL_ARG(type, name) declares one field of an options struct with a chained setter and a
// getter, as LibTorch's TORCH_ARG, so options read as
//
//   nn::Conv2dOptions(3, 64, 3).stride(1).padding(1).bias(false)
//   optim::SGDOptions(0.1).momentum(0.9).nesterov(true)
//
// Used inside a struct: `MINIDL_ARG(int64_t, stride) = 1;` gives `stride(value)` (returns the
// struct) and `stride()` (a const reference to the value), stored in `stride_`. The macro ends
// in a private section, so declare constructors and other public members before the fields.
// It lives in core/ so that every layer's options (nn/, optim/, data/, train/, ...) use it; a
// setter that checks, converts or sets more than its field is written by hand beside them.
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
