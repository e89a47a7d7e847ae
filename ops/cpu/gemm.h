#pragma once
// One row-major cblas_?gemm call on raw float or double buffers, for the CPU kernels that
// multiply tiles of their own (convolution's im2col columns, ops/cpu/conv.cpp; attention's
// blocks, ops/cpu/attention.cpp). OpenBLAS runs on the calling thread (ops/cpu/blas_threads.h):
// call use_calling_thread_blas() first.
#include <cblas.h>

#include <cstdint>
#include <type_traits>

namespace minidl::cpu {

// c [m, n] = op(a) [m, k] @ op(b) [k, n] + beta * c, row-major with the given leading
// dimensions.
template <class T>
void gemm(CBLAS_TRANSPOSE transpose_a, CBLAS_TRANSPOSE transpose_b, int64_t m, int64_t n, int64_t k,
          const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "BLAS multiplies float or double");
  const auto blas = [](int64_t value) { return static_cast<blasint>(value); };
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, transpose_a, transpose_b, blas(m), blas(n), blas(k), 1.0f, a,
                blas(lda), b, blas(ldb), beta, c, blas(ldc));
  } else {
    cblas_dgemm(CblasRowMajor, transpose_a, transpose_b, blas(m), blas(n), blas(k), 1.0, a,
                blas(lda), b, blas(ldb), beta, c, blas(ldc));
  }
}

}  // namespace minidl::cpu
