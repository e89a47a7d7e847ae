#pragma once
// CUDA device queries. Safe to call in any build: without CUDA (or without a GPU)
// is_available() is false and device_count() is 0; calls that need a GPU throw minidl::Error.
#include <string>

namespace minidl::cuda {

bool is_built();      // minidl was compiled with CUDA support
bool is_available();  // built with CUDA and at least one device is visible
// Asked once per process. A failure of the query (no driver, a driver too old for this build's
// CUDA runtime) counts as no device; it is logged once, as a warning when a driver is there.
int device_count();
// Why device_count() is 0, for messages: "minidl was built without CUDA", "no CUDA driver was
// found (...)", "the CUDA driver supports CUDA 12.4, older than ..."; empty with a device.
std::string unavailable_reason();
int current_device();
void set_device(int device);
void synchronize();  // waits for all work on the current device

// Throws a minidl::Error naming `what` when no CUDA device can be used.
void require_available(const char* what);

// Makes `device` current for the scope and restores the previous device after; does nothing
// when `device` is already current (the common case, so no driver call on the hot path).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;  // -1: nothing to restore
};

}  // namespace minidl::cuda
