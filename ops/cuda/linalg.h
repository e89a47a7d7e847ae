#pragma once
// CUDA matrix products through cuBLAS (defined in ops/cuda/linalg.cpp). Runs on the current
// stream of the tensors' device.
#include "minidl/core/tensor.h"

namespace minidl::cuda {

// c[i] = a[i] @ b[i] + beta * c[i] for every i of the batch, with the shapes and the layout
// contract of cpu::gemm (ops/cpu/linalg.h): a [batch, n, k], b [batch, k, m] (batch stride 0
// allowed), c [batch, n, m] contiguous, every matrix of a and b with unit stride along its
// columns or its rows. beta is 0 or 1. float32, float16 and bfloat16 accumulate in float32;
// float32 uses TF32 tensor cores only when `allow_tf32`.
void gemm(const Tensor& a, const Tensor& b, const Tensor& c, double beta, bool allow_tf32);

}  // namespace minidl::cuda
