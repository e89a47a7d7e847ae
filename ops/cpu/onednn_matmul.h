#pragma once
// bfloat16 matrix products on oneDNN (ops/cpu/onednn_matmul.cpp; ops/cpu/without_onednn.cpp in a
// build without it), called by ops/linalg.cpp for bfloat16 CPU operands. On a CPU with AVX-512
// BF16 oneDNN multiplies bfloat16 directly (vdpbf16ps: two products per float32 lane), where
// OpenBLAS, which has no bfloat16 arithmetic, needs both operands converted to float32 first;
// the GPT's bfloat16 step spent most of its time in those GEMMs and conversions.
#include "minidl/core/tensor.h"

namespace minidl::cpu {

// Whether onednn_bfloat16_gemm may be used: oneDNN there and switched on (ops/onednn.h), and
// the CPU has bfloat16 instructions (elsewhere oneDNN emulates them, slower than converting).
bool onednn_bfloat16_gemm_enabled();

// c [batch, n, m] (float32) = a [batch, n, k] @ b [batch, k, m] + beta * c, beta 0 or 1, for
// bfloat16 a and b laid out as LinalgKernels::gemm takes them (each matrix row- or column-major,
// batch stride 0 for a shared matrix), with float32 sums, rounded once into c. False, with c
// untouched, where oneDNN has only its reference kernel for the shapes; the caller then
// converts. Each output element is summed over the whole of k by one primitive call, in an
// order that does not depend on minidl's thread count.
bool onednn_bfloat16_gemm(const Tensor& a, const Tensor& b, const Tensor& c, double beta);

}  // namespace minidl::cpu
