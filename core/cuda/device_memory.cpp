// The real DeviceMemory: the CUDA runtime's allocator and events on one device.
#include "minidl/core/cuda/device_memory.h"

#include <mutex>
#include <vector>

#include "minidl/core/cuda/device.h"
#include "minidl/core/error.h"

#if MINIDL_WITH_CUDA
#include <cuda_runtime.h>

#include "minidl/core/cuda/check.h"
#endif

namespace minidl::cuda {

#if MINIDL_WITH_CUDA

namespace {

// Switches this thread to cudaStreamCaptureModeRelaxed for its scope, and back.
class RelaxedCaptureModeGuard {
 public:
  RelaxedCaptureModeGuard() { MINIDL_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode_)); }
  ~RelaxedCaptureModeGuard() { (void)cudaThreadExchangeStreamCaptureMode(&mode_); }
  RelaxedCaptureModeGuard(const RelaxedCaptureModeGuard&) = delete;
  RelaxedCaptureModeGuard& operator=(const RelaxedCaptureModeGuard&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

class CudaDeviceMemory final : public DeviceMemory {
 public:
  explicit CudaDeviceMemory(int device) : device_(device) {}

  ~CudaDeviceMemory() override {
    // Destroyed only with the allocator; its events are plain resources by then.
    for (cudaEvent_t event : spare_events_) (void)cudaEventDestroy(event);
  }

  void* allocate(size_t nbytes) override {
    DeviceGuard device_guard(device_);
    void* ptr = nullptr;
    cudaError_t status;
    {
      // A new segment for a graph's private pool is made while its capture is underway, when
      // the driver refuses cudaMalloc to the capturing thread (and, in global mode, to every
      // thread). It is safe all the same: the allocation is not a stream operation, and
      // replays use its address without allocating again; so, as PyTorch does, this thread
      // switches to relaxed capture mode for the call.
      RelaxedCaptureModeGuard relaxed;
      status = cudaMalloc(&ptr, nbytes);
    }
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // out of memory is an answer here, not a sticky error
      return nullptr;
    }
    MINIDL_CUDA_CHECK(status);
    return ptr;
  }

  void free(void* ptr) override {
    DeviceGuard device_guard(device_);
    MINIDL_CUDA_CHECK(cudaFree(ptr));
  }

  EventHandle record_event(StreamHandle stream) override {
    DeviceGuard device_guard(device_);
    cudaEvent_t event = take_spare_event();
    MINIDL_CUDA_CHECK(cudaEventRecord(event, stream));
    return event;
  }

  bool event_completed(EventHandle event) override {
    const cudaError_t status = cudaEventQuery(event);
    if (status == cudaErrorNotReady) return false;
    MINIDL_CUDA_CHECK(status);
    return true;
  }

  void synchronize_event(EventHandle event) override {
    MINIDL_CUDA_CHECK(cudaEventSynchronize(event));
  }

  void release_event(EventHandle event) override {
    std::lock_guard lock(events_mutex_);
    spare_events_.push_back(event);  // reused: creating events is a driver call
  }

  CaptureStatus capture_status(StreamHandle stream) override {
    // The legacy default stream is never captured, and asking about it while another stream
    // captures is itself an error (cudaErrorStreamCaptureImplicit).
    if (stream == nullptr) return {};
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    MINIDL_CUDA_CHECK(cudaStreamGetCaptureInfo(stream, &status, &id));
    // An invalidated capture is still underway until cudaStreamEndCapture: its allocations
    // belong to its pool all the same.
    if (status == cudaStreamCaptureStatusNone) return {};
    return {true, static_cast<uint64_t>(id)};
  }

  Capacity capacity() override {
    DeviceGuard device_guard(device_);
    Capacity result;
    if (cudaMemGetInfo(&result.free_bytes, &result.total_bytes) != cudaSuccess) {
      (void)cudaGetLastError();
      return {};
    }
    return result;
  }

 private:
  cudaEvent_t take_spare_event() {
    {
      std::lock_guard lock(events_mutex_);
      if (!spare_events_.empty()) {
        cudaEvent_t event = spare_events_.back();
        spare_events_.pop_back();
        return event;
      }
    }
    cudaEvent_t event = nullptr;
    MINIDL_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    return event;
  }

  int device_;
  std::mutex events_mutex_;
  std::vector<cudaEvent_t> spare_events_;
};

}  // namespace

std::unique_ptr<DeviceMemory> make_cuda_device_memory(int device) {
  require_available("CUDA device memory");
  MINIDL_CHECK(device >= 0 && device < device_count(), "CUDA allocation: expected a device index ",
               "in [0, ", device_count(), "), got ", device);
  return std::make_unique<CudaDeviceMemory>(device);
}

#else

std::unique_ptr<DeviceMemory> make_cuda_device_memory(int) {
  require_available("CUDA device memory");
  return nullptr;
}

#endif

}  // namespace minidl::cuda
