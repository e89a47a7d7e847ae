#pragma once
// Matrix products through OpenBLAS on the CPU and cuBLAS on CUDA.
#include "minidl/core/tensor.h"

namespace minidl {

// As torch.matmul: [n, k] x [k, m] -> [n, m]; with batch dimensions [..., n, k] x [..., k, m]
// -> [..., n, m], where the batch dimensions (all but the last two) broadcast and a 2-D operand
// is shared by every batch; a 1-D first operand is a row and a 1-D second one a column, that
// dimension removed from the result.
Tensor matmul(const Tensor& a, const Tensor& b);
// [b, n, k] x [b, k, m] -> [b, n, m], both 3-D with the same batch (no broadcasting), as
// torch.bmm.
Tensor bmm(const Tensor& a, const Tensor& b);
// beta * input + alpha * (a @ b) for matrices a [n, k], b [k, m] (addmm) or batches
// [B, n, k], [B, k, m] (baddbmm); input broadcasts to the product's shape, as torch.addmm.
Tensor addmm(const Tensor& input, const Tensor& a, const Tensor& b, double beta = 1,
             double alpha = 1);
Tensor baddbmm(const Tensor& input, const Tensor& a, const Tensor& b, double beta = 1,
               double alpha = 1);
// a [n] and b [m] -> [n, m], a[i] * b[j], as torch.outer.
Tensor outer(const Tensor& a, const Tensor& b);
// x W^T + b in one GEMM call: x [..., in], weight [out, in], bias [out] or undefined.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});

// TF32 tensor-core math for float32 GEMM and convolution on CUDA; off by default (exact fp32),
// like torch.backends.cuda.matmul.allow_tf32.
void set_allow_tf32(bool allow);
bool allow_tf32();

}  // namespace minidl
