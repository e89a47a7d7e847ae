#pragma once
// What a factory makes: dtype, device, requires_grad. Implicit from a DType or a Device, with
// chained setters, as in LibTorch: zeros({2, 3}, kFloat64), ones({4}, TensorOptions().device(d)).
#include <cstdint>
#include <optional>
#include <vector>

#include "minidl/core/device.h"
#include "minidl/core/dtype.h"

namespace minidl {

using Shape = std::vector<int64_t>;

// How a 4-D [N, C, H, W] tensor is laid out in memory. Its sizes are always NCHW; channels-last
// only changes the strides to those of an NHWC array ({H*W*C, 1, W*C, C}), as in PyTorch.
enum class MemoryFormat : int8_t { Contiguous, ChannelsLast };

// Two spatial sizes (height, width). One number means both, as LibTorch's ExpandingArray<2>:
// conv2d(x, w, b, /*stride=*/2) or conv2d(x, w, b, /*stride=*/{2, 1}).
struct Size2 {
  int64_t h = 0;
  int64_t w = 0;
  Size2(int64_t both) : h(both), w(both) {}
  Size2(int64_t height, int64_t width) : h(height), w(width) {}
  friend bool operator==(const Size2&, const Size2&) = default;
};

class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(DType dtype) : dtype_(dtype) {}
  TensorOptions(Device device) : device_(device) {}
  TensorOptions(DeviceType device_type) : device_(device_type) {}

  TensorOptions& dtype(DType value) {
    dtype_ = value;
    return *this;
  }
  TensorOptions& device(Device value) {
    device_ = value;
    return *this;
  }
  TensorOptions& requires_grad(bool value = true) {
    requires_grad_ = value;
    return *this;
  }

  // float32 (the default dtype) unless one was given; has_dtype() says whether one was, for the
  // factories that infer theirs (tensor({1, 2, 3}) is int64 unless the options give a dtype,
  // as in LibTorch).
  DType dtype() const { return dtype_.value_or(kFloat32); }
  bool has_dtype() const { return dtype_.has_value(); }
  Device device() const { return device_; }
  bool requires_grad() const { return requires_grad_; }

 private:
  std::optional<DType> dtype_;
  Device device_;
  bool requires_grad_ = false;
};

}  // namespace minidl
