#pragma once
// Matrix products through OpenBLAS on the CPU and cuBLAS on CUDA.
#include "minidl/core/tensor.h"

namespace minidl {

// [n, k] x [k, m] -> [n, m], or batched [b, n, k] x [b, k, m] -> [b, n, m]
// (a 2-D operand is broadcast over the batch).
Tensor matmul(const Tensor& a, const Tensor& b);
// x W^T + b in one GEMM call: x [..., in], weight [out, in], bias [out] or undefined.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});

// TF32 tensor-core math for float32 GEMM and convolution on CUDA; off by default (exact fp32),
// like torch.backends.cuda.matmul.allow_tf32.
void set_allow_tf32(bool allow);
bool allow_tf32();

}  // namespace minidl
