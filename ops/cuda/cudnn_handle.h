#pragma once
// The cuDNN handle that convolutions on a CUDA device use (defined in
// ops/cuda/cudnn_handle.cpp).
//
// One handle per device and per host thread (a cuDNN handle must not be used by two threads at
// once), created on first use and kept for the thread's lifetime. Each time it is fetched it is
// bound to the device's current stream, so everything launched through it is ordered with the
// other ops on that stream. Workspaces are not attached to the handle: each cuDNN call gets
// its own from the caching allocator. The handle type is declared here, as cudnn_graph.h
// declares it, to keep this header light.
struct cudnnContext;
typedef struct cudnnContext* cudnnHandle_t;

namespace minidl::cuda {

// The calling thread's handle for `device`, bound to current_stream(device). `device` must be
// the current CUDA device while the handle is used.
cudnnHandle_t cudnn_handle(int device);

}  // namespace minidl::cuda
