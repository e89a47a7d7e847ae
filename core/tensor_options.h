#pragma once
// What a factory makes: dtype, device, requires_grad. Implicit from a DType or a Device, with
// chained setters, as in LibTorch: zeros({2, 3}, kFloat64), ones({4}, TensorOptions().device(d)).
#include <cstdint>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"

namespace minidl {

using Shape = std::vector<int64_t>;

class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(DType dtype) : dtype_(dtype) {}
  TensorOptions(Device device) : device_(device) {}
  TensorOptions(DeviceType device_type) : device_(device_type) {}

  TensorOptions& dtype(DType value) { dtype_ = value; return *this; }
  TensorOptions& device(Device value) { device_ = value; return *this; }
  TensorOptions& requires_grad(bool value = true) { requires_grad_ = value; return *this; }

  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  bool requires_grad() const { return requires_grad_; }

 private:
  DType dtype_ = kFloat32;
  Device device_;
  bool requires_grad_ = false;
};

}  // namespace minidl
