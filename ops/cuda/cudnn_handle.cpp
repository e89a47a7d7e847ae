// cuDNN handles per (thread, device), bound to the current stream (see
// ops/cuda/cudnn_handle.h). Compiled in every build; without CUDA it defines nothing.
#include "minidl/ops/cuda/cudnn_handle.h"

#include "minidl/core/cuda/build.h"

#if MINIDL_WITH_CUDA

#include <cudnn.h>

#include <vector>

#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device.h"
#include "minidl/core/cuda/stream.h"

namespace minidl::cuda {

namespace {

struct DeviceCudnnState {
  cudnnHandle_t handle = nullptr;
  bool bound = false;
  StreamHandle bound_stream = nullptr;
};

class ThreadCudnnStates {
 public:
  ~ThreadCudnnStates() {
    // Destructors only log; a failure to destroy a handle at thread exit is not worth one.
    for (DeviceCudnnState& state : devices_)
      if (state.handle != nullptr) (void)cudnnDestroy(state.handle);
  }
  DeviceCudnnState& at(int device) {
    if (devices_.size() <= static_cast<size_t>(device))
      devices_.resize(static_cast<size_t>(device) + 1);
    return devices_[static_cast<size_t>(device)];
  }

 private:
  std::vector<DeviceCudnnState> devices_;
};

thread_local ThreadCudnnStates thread_cudnn_states;

}  // namespace

cudnnHandle_t cudnn_handle(int device) {
  MINIDL_CHECK(device >= 0 && device < device_count(), "cudnn_handle: no CUDA device ", device,
               " (", device_count(), " visible)");  // device_count() is cached: no driver call
  DeviceCudnnState& state = thread_cudnn_states.at(device);
  if (state.handle == nullptr) {
    cudnnHandle_t handle = nullptr;
    MINIDL_CUDNN_CHECK(cudnnCreate(&handle));  // on the current device, which is `device`
    state.handle = handle;
  }
  const StreamHandle stream = current_stream_handle(device);
  if (!state.bound || state.bound_stream != stream) {
    MINIDL_CUDNN_CHECK(cudnnSetStream(state.handle, stream));
    state.bound = true;
    state.bound_stream = stream;
  }
  return state.handle;
}

}  // namespace minidl::cuda

#endif  // MINIDL_WITH_CUDA
