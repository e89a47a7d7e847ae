#pragma once
// MINIDL_HOST_DEVICE marks small functions (element-wise math, half conversions) that are
// compiled for both the CPU loops and the CUDA kernels. It is empty for the host compiler.
#if defined(__CUDACC__)
#define MINIDL_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define MINIDL_HOST_DEVICE inline
#endif
