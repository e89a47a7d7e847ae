#pragma once
// cuBLAS, opened when a CUDA matrix product first needs it, not when a program starts.
//
// Linked as a dependency, libcublas brings libcublasLt, whose loading alone took 0.10 s and
// 25,000 page faults before main() (an empty program linked to it, 2026-11-29, on the 2-core
// build machine): paid by every process of a CUDA build, a CPU-only program and each of CI's
// 2,800 test processes among them, nearly all of which never multiply on a GPU. So minidl opens
// it with dlopen when the first cuBLAS handle is made (ops/cuda/blas_handle.cpp) and calls it
// through the pointers below, as PyTorch reaches NVRTC (LazyNVRTC).
//
// Where from: libcublas.so.<the headers' major version>, by the dynamic loader's search (the
// program's RUNPATH, which holds the CUDA runtime's folder, then LD_LIBRARY_PATH and the
// system's folders); failing that, the file the build was configured with.
//
// Only for sources that call cuBLAS (CUDA builds): it includes cuBLAS's header.
#include <cublas_v2.h>

#include "minidl/core/cuda/check.h"

namespace minidl::cuda {

// The cuBLAS functions minidl calls. cublasGemmEx and cublasGemmStridedBatchedEx are named by
// their types: cuBLAS's header also declares C++ overloads of them taking a cudaDataType.
struct CublasLibrary {
  using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const void*, const void*, cudaDataType, int, const void*,
                                    cudaDataType, int, const void*, void*, cudaDataType, int,
                                    cublasComputeType_t, cublasGemmAlgo_t);
  using GemmStridedBatchedEx = cublasStatus_t (*)(
      cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*, const void*,
      cudaDataType, int, long long int, const void*, cudaDataType, int, long long int, const void*,
      void*, cudaDataType, int, long long int, int, cublasComputeType_t, cublasGemmAlgo_t);

  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetWorkspace_v2) set_workspace = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
  GemmEx gemm_ex = nullptr;
  GemmStridedBatchedEx gemm_strided_batched_ex = nullptr;
};

// Opens cuBLAS and finds the functions above on the first call (thread-safe; a call that throws
// leaves the next to try again); the library stays open for the process's life. Throws
// minidl::Error with each file tried and the loader's reason, or the function it lacks.
const CublasLibrary& cublas();
// Whether cublas() has opened the library in this process.
bool cublas_opened();

}  // namespace minidl::cuda

#define MINIDL_CUBLAS_CHECK(call)                                                             \
  do {                                                                                        \
    const cublasStatus_t minidl_status_ = (call);                                             \
    if (minidl_status_ != CUBLAS_STATUS_SUCCESS) [[unlikely]]                                 \
      ::minidl::cuda::detail::throw_library_error(                                            \
          "cuBLAS", static_cast<int>(minidl_status_),                                         \
          ::minidl::cuda::cublas().status_string(minidl_status_), #call, __FILE__, __LINE__); \
  } while (0)
