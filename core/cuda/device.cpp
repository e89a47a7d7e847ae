// Device queries and the device guard. In a build without CUDA every query answers "no device"
// and every call that needs one throws.
#include "minidl/core/cuda/device.h"

#include <spdlog/spdlog.h>

#include "minidl/core/error.h"
#include "minidl/core/logging.h"

#if MINIDL_WITH_CUDA
#include <cuda_runtime.h>

#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device_error.h"
#endif

namespace minidl::cuda {

#if MINIDL_WITH_CUDA

bool is_built() { return true; }

namespace {

struct DeviceQuery {
  int count = 0;
  std::string unavailable_reason;  // empty when count > 0
};

// "13.0" for the runtime's and driver's 13000.
std::string cuda_version(int version) {
  return minidl::detail::concat(version / 1000, ".", version % 1000 / 10);
}

// The device count, or why there is no device. The reason is logged here, once per process:
// as a warning when a driver is installed but the query failed (a GPU machine whose driver is
// too old for this build would otherwise look like a machine without a GPU), else at debug
// level (a build machine without a GPU is normal).
DeviceQuery query_devices() {
  DeviceQuery query;
  const cudaError_t status = cudaGetDeviceCount(&query.count);
  if (status == cudaSuccess && query.count > 0) return query;
  (void)cudaGetLastError();  // clear it so later, unrelated checks do not report it
  query.count = 0;
  int driver = 0, runtime = 0;
  (void)cudaDriverGetVersion(&driver);  // 0 when no driver is installed
  (void)cudaRuntimeGetVersion(&runtime);
  const std::string error = minidl::detail::concat("cudaGetDeviceCount: ", cudaGetErrorName(status),
                                                   ": ", cudaGetErrorString(status));
  bool warn = false;
  if (status == cudaSuccess || status == cudaErrorNoDevice) {
    query.unavailable_reason = "no GPU is visible to this process";
  } else if (driver == 0) {
    query.unavailable_reason = minidl::detail::concat("no CUDA driver was found (", error, ")");
  } else if (driver / 1000 < runtime / 1000) {
    warn = true;
    query.unavailable_reason = minidl::detail::concat(
        "the CUDA driver supports CUDA ", cuda_version(driver), ", older than the CUDA ",
        cuda_version(runtime), " runtime minidl was built with (", error, ")");
  } else {
    warn = true;
    query.unavailable_reason =
        minidl::detail::concat(error, " (driver for CUDA ", cuda_version(driver), ", runtime CUDA ",
                               cuda_version(runtime), ")");
  }
  if (warn)
    logger().warn("CUDA: {}; minidl runs without a GPU", query.unavailable_reason);
  else
    logger().debug("CUDA: {}", query.unavailable_reason);
  return query;
}

const DeviceQuery& device_query() {
  // Asked once: the set of visible devices does not change while a process runs.
  static const DeviceQuery query = query_devices();
  return query;
}

}  // namespace

int device_count() { return device_query().count; }
std::string unavailable_reason() { return device_query().unavailable_reason; }

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
  raise_device_error_if_any(current_device());  // Note [Deferred device errors]
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
std::string unavailable_reason() { return "minidl was built without CUDA"; }
int current_device() { return 0; }
void set_device(int) { require_available("set_device"); }
void synchronize() { require_available("synchronize"); }
DeviceGuard::DeviceGuard(int) { require_available("DeviceGuard"); }
DeviceGuard::~DeviceGuard() = default;

#endif

bool is_available() { return device_count() > 0; }

void require_available(const char* what) {
  MINIDL_CHECK(is_available(), what, ": no CUDA device is available (", unavailable_reason(), ")");
}

}  // namespace minidl::cuda
