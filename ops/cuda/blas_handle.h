#pragma once
// The cuBLAS handle that GEMMs on a CUDA device use (defined in ops/cuda/blas_handle.cpp).
//
// One handle per device and per host thread (cuBLAS handles must not be used by two threads at
// once), created on first use and kept for the thread's lifetime. Each time it is fetched it is
// bound to the device's current stream, together with a workspace for that stream that is
// allocated once from the caching allocator and reused by every later call on that stream.
// The handle type is declared here, as cublas_api.h declares it, to keep this header light.
struct cublasContext;
typedef struct cublasContext* cublasHandle_t;

namespace minidl::cuda {

// The calling thread's handle for `device`, bound to current_stream(device) and its workspace.
// `device` must be the current CUDA device while the handle is used.
cublasHandle_t blas_handle(int device);

}  // namespace minidl::cuda
