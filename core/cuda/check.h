#pragma once
// Checks on CUDA library calls, for .cu and CUDA-aware .cpp files only. Each failure throws
// minidl::Error with file:line, the call, and the library's own message. Every kernel launch
// is followed by MINIDL_LAUNCH_CHECK(), which catches bad launch configurations at once
// without synchronising.
#include <cuda_runtime.h>

#include "minidl/core/error.h"

namespace minidl::cuda::detail {
[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file,
                                   int line);
[[noreturn]] void throw_library_error(const char* library, int status, const char* message,
                                      const char* call, const char* file, int line);
}  // namespace minidl::cuda::detail

#define MINIDL_CUDA_CHECK(call)                                                            \
  do {                                                                                     \
    const cudaError_t minidl_status_ = (call);                                             \
    if (minidl_status_ != cudaSuccess) [[unlikely]]                                        \
      ::minidl::cuda::detail::throw_cuda_error(minidl_status_, #call, __FILE__, __LINE__); \
  } while (0)

#define MINIDL_LAUNCH_CHECK() MINIDL_CUDA_CHECK(cudaGetLastError())

// For cuDNN and NCCL: include their header first, then use these. (cuBLAS's check is
// MINIDL_CUBLAS_CHECK in ops/cuda/cublas_library.h.)
#define MINIDL_CUDNN_CHECK(call)                                                              \
  do {                                                                                        \
    const cudnnStatus_t minidl_status_ = (call);                                              \
    if (minidl_status_ != CUDNN_STATUS_SUCCESS) [[unlikely]]                                  \
      ::minidl::cuda::detail::throw_library_error("cuDNN", static_cast<int>(minidl_status_),  \
                                                  cudnnGetErrorString(minidl_status_), #call, \
                                                  __FILE__, __LINE__);                        \
  } while (0)

#define MINIDL_NCCL_CHECK(call)                                                              \
  do {                                                                                       \
    const ncclResult_t minidl_status_ = (call);                                              \
    if (minidl_status_ != ncclSuccess) [[unlikely]]                                          \
      ::minidl::cuda::detail::throw_library_error("NCCL", static_cast<int>(minidl_status_),  \
                                                  ncclGetErrorString(minidl_status_), #call, \
                                                  __FILE__, __LINE__);                       \
  } while (0)
