#pragma once
// CUDA device queries. Safe to call in any build: without CUDA (or without a GPU)
// is_available() is false and device_count() is 0; calls that need a GPU throw minidl::Error.
namespace minidl::cuda {

bool is_built();      // minidl was compiled with CUDA support
bool is_available();  // built with CUDA and at least one device is visible
int device_count();
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
