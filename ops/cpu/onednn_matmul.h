#pragma once
// Matrix products on oneDNN's matmul (ops/cpu/onednn_matmul.cpp; ops/cpu/without_onednn.cpp in a
// build without it), called by the CPU GEMM (ops/cpu/linalg.cpp) before OpenBLAS:
// - bfloat16, on CPUs with AVX-512 BF16: oneDNN multiplies bfloat16 directly (vdpbf16ps: two
//   products per float32 lane), where OpenBLAS, which has no bfloat16 arithmetic, needs both
//   operands converted to float32 first;
// - float32, on CPUs with AVX-512: oneDNN's brgemm kernels took half OpenBLAS's time in the
//   GPT's step (its GEMMs 96-105 -> 51-52 ms per step, 2 threads, AVX-512 BF16 EPYC,
//   2026-11-26). On AVX2 the two were even (LeNet's step within 0.2 ms of 22), so OpenBLAS stays.
#include "minidl/core/dtype.h"
#include "minidl/core/tensor.h"

namespace minidl::cpu {

// Whether onednn_gemm may take operands of `dtype`: oneDNN there and switched on
// (ops/onednn.h), and the CPU instructions above.
bool onednn_gemm_enabled(DType dtype);

// c [batch, n, m] (float32) = a [batch, n, k] @ b [batch, k, m] + beta * c, beta 0 or 1, for
// float32 or bfloat16 a and b laid out as LinalgKernels::gemm takes them (each matrix row- or
// column-major, batch stride 0 for a shared matrix), with float32 sums, each rounded once into c;
// for bfloat16 a and b and beta 0, c may be bfloat16, which oneDNN writes directly (to nearest
// even, as a cast; a float32 subnormal sum becomes zero there, where a cast keeps it).
// False, with c untouched, where oneDNN has only its reference kernel for the shapes; the
// caller then uses OpenBLAS. Each output element is summed over the whole of k by one primitive
// call, or, where k dwarfs the other sizes (a weight gradient over a batch of tokens), over
// chunks of k whose partial products are added in order (Note [Products split along k] in
// onednn_matmul.cpp); either way in an order that does not depend on minidl's thread count.
bool onednn_gemm(const Tensor& a, const Tensor& b, const Tensor& c, double beta);

}  // namespace minidl::cpu
