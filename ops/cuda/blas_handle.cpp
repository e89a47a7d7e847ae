// cuBLAS handles per (thread, device), bound to the current stream (see ops/cuda/blas_handle.h).
// Compiled in every build; without CUDA it defines nothing.
#include "minidl/ops/cuda/blas_handle.h"

#include "minidl/core/cuda/build.h"

#if MINIDL_WITH_CUDA

#include <memory>
#include <unordered_map>

#include "minidl/core/cuda/caching_allocator.h"
#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device.h"
#include "minidl/core/cuda/stream.h"
#include "minidl/ops/cuda/cublas_library.h"
#include "minidl/ops/cuda/per_thread_device_states.h"

namespace minidl::cuda {

namespace {

// cuBLAS's recommended workspace sizes (cublasSetWorkspace): 32 MiB on Hopper and newer,
// 4 MiB on earlier GPUs.
constexpr size_t kWorkspaceBytesHopper = size_t{32} << 20;
constexpr size_t kWorkspaceBytesDefault = size_t{4} << 20;

size_t workspace_bytes(int device) {
  int major = 0;
  MINIDL_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return major >= 9 ? kWorkspaceBytesHopper : kWorkspaceBytesDefault;
}

struct DeviceBlasState {
  cublasHandle_t handle = nullptr;
  bool bound = false;
  StreamHandle bound_stream = nullptr;
  size_t workspace_bytes = 0;
  // One workspace per stream the handle has run on: a workspace must not be shared by
  // streams that may run at the same time.
  std::unordered_map<StreamHandle, std::shared_ptr<void>> workspaces;

  void destroy() {
    if (handle != nullptr) (void)cublas().destroy(handle);
  }
};

thread_local PerThreadDeviceStates<DeviceBlasState> thread_blas_states;

}  // namespace

cublasHandle_t blas_handle(int device) {
  DeviceBlasState& state = thread_blas_states.at(device, "blas_handle");
  if (state.handle == nullptr) {
    state.workspace_bytes = workspace_bytes(device);
    cublasHandle_t handle = nullptr;
    MINIDL_CUBLAS_CHECK(cublas().create(&handle));
    state.handle = handle;
    // fp16/bf16 GEMMs accumulate in fp32 all the way: no split-K reductions in 16 bits.
    MINIDL_CUBLAS_CHECK(cublas().set_math_mode(
        handle, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH |
                                          CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
  }
  const StreamHandle stream = current_stream_handle(device);
  if (!state.bound || state.bound_stream != stream) {
    // cublasSetStream resets the workspace to cuBLAS's default pool, so set ours after it.
    MINIDL_CUBLAS_CHECK(cublas().set_stream(state.handle, stream));
    std::shared_ptr<void>& workspace = state.workspaces[stream];
    // Allocated on the current stream, which is `stream`. An eager call on the stream before a
    // CUDA graph capture (the warm-up) makes it in the general pool; made during a capture, it
    // comes from the graph's private pool and stays allocated with the thread, so that pool
    // keeps its segment (core/cuda/graph.h asks for the warm-up).
    if (!workspace) workspace = CachingAllocator::allocate_shared(state.workspace_bytes, device);
    MINIDL_CUBLAS_CHECK(
        cublas().set_workspace(state.handle, workspace.get(), state.workspace_bytes));
    state.bound = true;
    state.bound_stream = stream;
  }
  return state.handle;
}

}  // namespace minidl::cuda

#endif  // MINIDL_WITH_CUDA
