#pragma once
// The calling thread's state of a per-device library handle (cuBLAS's, cuDNN's), one per CUDA
// device, made on first use and destroyed at thread exit. Such handles are per thread because
// a handle must not be used by two threads at once (each binds its stream and workspace).
// Host-only; compiled in CUDA builds.
#include <cstddef>
#include <vector>

#include "minidl/core/cuda/device.h"
#include "minidl/core/error.h"

namespace minidl::cuda {

// State: default-constructible, with destroy() releasing what it holds (called once, at thread
// exit; it should only log on failure).
template <class State>
class PerThreadDeviceStates {
 public:
  PerThreadDeviceStates() = default;
  PerThreadDeviceStates(const PerThreadDeviceStates&) = delete;
  PerThreadDeviceStates& operator=(const PerThreadDeviceStates&) = delete;
  ~PerThreadDeviceStates() {
    for (State& state : devices_) state.destroy();
  }

  // The state of `device`; `caller` names the function in the error for a device that is not
  // there.
  State& at(int device, const char* caller) {
    MINIDL_CHECK(device >= 0 && device < device_count(), caller, ": no CUDA device ", device, " (",
                 device_count(), " visible)");  // device_count() is cached: no driver call
    if (devices_.size() <= static_cast<size_t>(device))
      devices_.resize(static_cast<size_t>(device) + 1);
    return devices_[static_cast<size_t>(device)];
  }

 private:
  std::vector<State> devices_;
};

}  // namespace minidl::cuda
