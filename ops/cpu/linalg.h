#pragma once
// CPU matrix products through OpenBLAS (defined in ops/cpu/linalg.cpp).
#include "minidl/core/tensor.h"

namespace minidl::cpu {

// c[i] = a[i] @ b[i] + beta * c[i] for every i of the batch, with
//   a: [batch, n, k], b: [batch, k, m] (either may have batch stride 0: one matrix broadcast),
//   c: [batch, n, m], contiguous. beta is 0 (c is overwritten) or 1 (c is accumulated into).
// Every matrix of a and b is BLAS-compatible: unit stride along its columns with row stride
// >= max(1, cols) (read as is), or unit stride along its rows with column stride
// >= max(1, rows) (read as a transpose, without a copy). ops/linalg.cpp guarantees this.
// dtype float32 or float64 (16-bit types are converted to float32 by the caller).
void gemm(const Tensor& a, const Tensor& b, const Tensor& c, double beta);

}  // namespace minidl::cpu
