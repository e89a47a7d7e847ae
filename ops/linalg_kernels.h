#pragma once
// The kernel interface of the matrix products (ops/linalg.cpp), implemented by
// ops/cpu/linalg.cpp (OpenBLAS) and ops/cuda/linalg.cpp (cuBLAS, on the current stream of the
// tensors' device); dispatched by kernels_for (Note [Kernel tables] in core/dispatch.h).
#include "minidl/core/tensor.h"

namespace minidl {

struct LinalgKernels {
  // c[i] = a[i] @ b[i] + beta * c[i] for every i of the batch, with
  //   a: [batch, n, k], b: [batch, k, m] (either may have batch stride 0: one matrix broadcast),
  //   c: [batch, n, m], contiguous. beta is 0 (c is overwritten) or 1 (c is accumulated into).
  // Every matrix of a and b is BLAS-compatible: unit stride along its columns with row stride
  // >= max(1, cols) (read as is), or unit stride along its rows with column stride
  // >= max(1, rows) (read as a transpose, without a copy). ops/linalg.cpp guarantees this.
  // dtypes: on the CPU, float32 or float64, or float16 or bfloat16 a and b with a float32 c (the
  // product summed and stored in float32; the caller rounds it) or, with beta 0, a c of their own
  // dtype (the float32 sums rounded once into it): float32 and bfloat16 on oneDNN on CPUs where
  // it is faster (ops/cpu/onednn_matmul.h), else OpenBLAS, 16-bit operands converted to float32
  // first. On CUDA float32, float16 and bfloat16, accumulating in float32,
  // float32 on TF32 tensor cores only when allow_tf32() (ops/linalg.h), which the CUDA kernel reads
  // at each call.
  void (*gemm)(const Tensor& a, const Tensor& b, const Tensor& c, double beta);

  static const LinalgKernels kCpu;
  static const LinalgKernels kCuda;
};

}  // namespace minidl
