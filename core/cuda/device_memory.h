#pragma once
// What the caching allocator asks of a device: raw memory, events to learn when other streams
// are done with a block, and whether a stream is being captured into a CUDA graph. The real one
// calls cudaMalloc/cudaFree, cudaEvent* and cudaStreamGetCaptureInfo; tests plug in a fake with
// a capacity limit and a capture state they set, so the allocator's policy is tested without a
// GPU.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "minidl/core/cuda/stream.h"

namespace minidl::cuda {

class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;

  // `nbytes` of raw device memory, or nullptr when the device has not that much left (any
  // other failure throws).
  virtual void* allocate(size_t nbytes) = 0;
  virtual void free(void* ptr) = 0;

  // A marker of the work queued on `stream` so far, and whether that work has finished. Used
  // for blocks that other streams used (Note [Using memory on another stream]).
  virtual EventHandle record_event(StreamHandle stream) = 0;
  virtual bool event_completed(EventHandle event) = 0;
  // Blocks the host until `event` has passed (the allocator's last resort before running out
  // of memory; never during a capture).
  virtual void synchronize_event(EventHandle event) = 0;
  virtual void release_event(EventHandle event) = 0;

  // Free and total bytes of the device, for out-of-memory messages; {0, 0} when unknown.
  struct Capacity {
    size_t free_bytes = 0, total_bytes = 0;
  };
  virtual Capacity capacity() { return {}; }

  // Whether work queued on `stream` is being captured into a CUDA graph rather than run, and
  // then the capture's id (cudaStreamGetCaptureInfo: unique over the process's lifetime). See
  // Note [CUDA graph private pools] in caching_allocator.cpp.
  struct CaptureStatus {
    bool capturing = false;
    uint64_t capture_id = 0;
  };
  virtual CaptureStatus capture_status(StreamHandle stream) = 0;
};

// cudaMalloc/cudaFree on `device` (CUDA builds; elsewhere it throws: there is no device).
std::unique_ptr<DeviceMemory> make_cuda_device_memory(int device);

}  // namespace minidl::cuda
