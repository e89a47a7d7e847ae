// cuDNN handles per (thread, device), bound to the current stream (see
// ops/cuda/cudnn_handle.h). Compiled in every build; without CUDA it defines nothing.
#include "minidl/ops/cuda/cudnn_handle.h"

#include "minidl/core/cuda/build.h"

#if MINIDL_WITH_CUDA

#include <cudnn.h>

#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device.h"
#include "minidl/core/cuda/stream.h"
#include "minidl/ops/cuda/per_thread_device_states.h"

namespace minidl::cuda {

namespace {

struct DeviceCudnnState {
  cudnnHandle_t handle = nullptr;
  bool bound = false;
  StreamHandle bound_stream = nullptr;

  void destroy() {
    if (handle != nullptr) (void)cudnnDestroy(handle);
  }
};

thread_local PerThreadDeviceStates<DeviceCudnnState> thread_cudnn_states;

}  // namespace

cudnnHandle_t cudnn_handle(int device) {
  DeviceCudnnState& state = thread_cudnn_states.at(device, "cudnn_handle");
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
