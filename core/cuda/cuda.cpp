// Device queries and the device guard. In a build without CUDA every query answers "no device"
// and every call that needs one throws.
#include "minidl/core/cuda/cuda.h"

#include <spdlog/spdlog.h>

#include "minidl/core/error.h"
#include "minidl/core/logging.h"

#if MINIDL_WITH_CUDA
#include <cuda_runtime.h>

#include "minidl/core/cuda/check.h"
#endif

namespace minidl::cuda {

#if MINIDL_WITH_CUDA

bool is_built() { return true; }

int device_count() {
  // Asked once: the set of visible devices does not change while a process runs. Any error
  // (no driver, no device, driver too old) means no usable device, never an exception.
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      (void)cudaGetLastError();  // clear it so later, unrelated checks do not report it
      return 0;
    }
    return n;
  }();
  return count;
}

int current_device() {
  if (device_count() == 0) return 0;
  int device = 0;
  MINIDL_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

void set_device(int device) {
  require_available("set_device");
  MINIDL_CHECK(device >= 0 && device < device_count(),
               "set_device: expected a device index in [0, ", device_count(), "), got ", device);
  MINIDL_CUDA_CHECK(cudaSetDevice(device));
}

void synchronize() {
  require_available("synchronize");
  MINIDL_CUDA_CHECK(cudaDeviceSynchronize());
}

DeviceGuard::DeviceGuard(int device) {
  const int current = current_device();
  if (device == current) return;
  set_device(device);
  previous_ = current;
}

DeviceGuard::~DeviceGuard() {
  if (previous_ < 0) return;
  const cudaError_t status = cudaSetDevice(previous_);
  if (status != cudaSuccess)
    logger().error("DeviceGuard: could not restore device {}: {}", previous_,
                   cudaGetErrorString(status));
}

#else  // a build without CUDA

bool is_built() { return false; }
int device_count() { return 0; }
int current_device() { return 0; }
void set_device(int) { require_available("set_device"); }
void synchronize() { require_available("synchronize"); }
DeviceGuard::DeviceGuard(int) { require_available("DeviceGuard"); }
DeviceGuard::~DeviceGuard() = default;

#endif

bool is_available() { return device_count() > 0; }

void require_available(const char* what) {
  MINIDL_CHECK(is_available(), what, ": no CUDA device is available (",
               is_built() ? "no GPU is visible to this process" : "minidl was built without CUDA",
               ")");
}

}  // namespace minidl::cuda
