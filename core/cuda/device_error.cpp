// The host side of Note [Deferred device errors] (core/cuda/device_error.h): one record per
// device, created on first use and kept for the life of the process (kernels queued at exit may
// still write it), and the check the sync points call.
#include "minidl/core/cuda/device_error.h"

#if MINIDL_WITH_CUDA
#include <cuda_runtime.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device.h"
#include "minidl/core/cuda/graph.h"
#include "minidl/core/error.h"

namespace minidl::cuda {

namespace {

// The mapped pinned part of a device's record.
struct MappedErrorMemory {
  DeviceErrorRecord record;
  unsigned long long armed = 0;  // the claim value the next report must find
};

struct DeviceErrorState {
  unsigned long long* claim = nullptr;       // device memory
  MappedErrorMemory* host = nullptr;         // the mapped memory, as the host addresses it
  MappedErrorMemory* device_view = nullptr;  // the same memory, as kernels address it
};

// The states of every device, never freed. The mutex guards creation and raising; the check
// of a sync point reads the state's pointer without it.
struct DeviceErrorStates {
  std::mutex mutex;
  std::vector<std::atomic<DeviceErrorState*>> of_device;
  explicit DeviceErrorStates(int devices) : of_device(static_cast<size_t>(devices)) {}
};

DeviceErrorStates& states() {
  static DeviceErrorStates* all = new DeviceErrorStates(device_count());
  return *all;
}

DeviceErrorState* create_state(int device) {
  check_not_capturing(device, "the first launch of a kernel that checks its indices",
                      "it creates the device's error record (Note [Deferred device errors]); run "
                      "the step once before capturing it");
  DeviceGuard device_guard(device);
  auto state = std::make_unique<DeviceErrorState>();
  MINIDL_CUDA_CHECK(cudaMalloc(&state->claim, sizeof(unsigned long long)));
  MINIDL_CUDA_CHECK(cudaMemset(state->claim, 0, sizeof(unsigned long long)));
  void* host = nullptr;
  MINIDL_CUDA_CHECK(
      cudaHostAlloc(&host, sizeof(MappedErrorMemory), cudaHostAllocMapped | cudaHostAllocPortable));
  state->host = new (host) MappedErrorMemory();
  void* device_view = nullptr;
  MINIDL_CUDA_CHECK(cudaHostGetDevicePointer(&device_view, host, 0));
  state->device_view = static_cast<MappedErrorMemory*>(device_view);
  // The claim word's zero must be in place before any kernel of any stream reads it; once per
  // device per process.
  MINIDL_CUDA_CHECK(cudaDeviceSynchronize());
  return state.release();
}

DeviceErrorState* existing_state(int device) {
  DeviceErrorStates& all = states();
  if (device < 0 || device >= static_cast<int>(all.of_device.size())) return nullptr;
  return all.of_device[static_cast<size_t>(device)].load(std::memory_order_acquire);
}

}  // namespace

DeviceErrorSlot device_error_slot(int device, DescribeDeviceError describe) {
  DeviceErrorState* state = existing_state(device);
  if (state == nullptr) {
    DeviceErrorStates& all = states();
    MINIDL_INTERNAL_ASSERT(device >= 0 && device < static_cast<int>(all.of_device.size()),
                           "no CUDA device ", device);
    std::lock_guard lock(all.mutex);
    std::atomic<DeviceErrorState*>& slot = all.of_device[static_cast<size_t>(device)];
    state = slot.load(std::memory_order_acquire);
    if (state == nullptr) {
      state = create_state(device);
      slot.store(state, std::memory_order_release);
    }
  }
  return DeviceErrorSlot{
      .claim = state->claim,
      .armed = &state->device_view->armed,
      .record = &state->device_view->record,
      .describe = reinterpret_cast<uint64_t>(describe),
  };
}

void raise_device_error_if_any(int device) {
  DeviceErrorState* state = existing_state(device);
  if (state == nullptr) return;
  volatile int32_t& published = state->host->record.published;
  if (published == 0) return;
  std::string message;
  {
    std::lock_guard lock(states().mutex);
    if (published == 0) return;  // another thread raised it
    const volatile DeviceErrorRecord& record = state->host->record;
    const auto describe = reinterpret_cast<DescribeDeviceError>(record.describe);
    message = describe(record.value, record.position, record.bound);
    published = 0;
    // The next report must find the claim word where the winner of this one left it.
    volatile unsigned long long& armed = state->host->armed;
    armed = armed + 1;
  }
  minidl::detail::throw_error(__FILE__, __LINE__, message);
}

}  // namespace minidl::cuda

#endif  // MINIDL_WITH_CUDA
