// CPU GEMM: one cblas_?gemm call per matrix of the batch, row-major, with transposed operands
// passed as BLAS transposes (see the layout contract in ops/linalg_kernels.h); float32 and
// bfloat16 on oneDNN first where the CPU suits it (ops/cpu/onednn_matmul.h), 16-bit operands
// otherwise converted to float32.
#include <cblas.h>

#include <algorithm>
#include <limits>
#include <type_traits>

#include "minidl/core/factories.h"
#include "minidl/core/parallel.h"
#include "minidl/ops/cpu/blas_threads.h"
#include "minidl/ops/cpu/onednn_matmul.h"
#include "minidl/ops/linalg_kernels.h"

namespace minidl::cpu {

namespace {

// OpenBLAS runs on the calling thread (ops/cpu/blas_threads.h), so minidl's CPU threads split the
// work: the matrices of a batch and, within each matrix, blocks of rows of c, each task at least
// this many multiply-adds.
constexpr int64_t kMultiplyAddsPerTask = 1 << 20;

// How BLAS reads one operand: as stored (row-major, ld = row stride) or as the transpose of a
// row-major matrix (ld = column stride).
struct BlasOperand {
  CBLAS_TRANSPOSE transpose;
  blasint leading_dim;
};

BlasOperand blas_operand(const Tensor& matrices) {
  const int64_t row_stride = matrices.stride(1), col_stride = matrices.stride(2);
  if (col_stride == 1) return {CblasNoTrans, static_cast<blasint>(row_stride)};
  MINIDL_INTERNAL_ASSERT(row_stride == 1, "gemm: operand of shape ", matrices.sizes(),
                         " and strides ", matrices.strides(), " is not BLAS-compatible");
  return {CblasTrans, static_cast<blasint>(col_stride)};
}

template <class T>
void gemm_one(const BlasOperand& a_op, const BlasOperand& b_op, blasint n, blasint m, blasint k,
              const T* a, const T* b, T* c, T beta) {
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, a_op.transpose, b_op.transpose, n, m, k, 1.0f, a, a_op.leading_dim,
                b, b_op.leading_dim, beta, c, m);
  } else {
    cblas_dgemm(CblasRowMajor, a_op.transpose, b_op.transpose, n, m, k, 1.0, a, a_op.leading_dim, b,
                b_op.leading_dim, beta, c, m);
  }
}

template <class T>
void gemm_typed(const Tensor& a, const Tensor& b, const Tensor& c, double beta) {
  const int64_t batch = c.size(0), n = c.size(1), m = c.size(2), k = a.size(2);
  const BlasOperand a_op = blas_operand(a), b_op = blas_operand(b);
  const T* a_data = static_cast<const T*>(a.data_ptr());
  const T* b_data = static_cast<const T*>(b.data_ptr());
  T* c_data = static_cast<T*>(c.data_ptr());
  const int64_t a_batch_stride = a.stride(0), b_batch_stride = b.stride(0), c_batch_stride = n * m;
  const int64_t multiply_adds = n * m * k;
  // Rows [row_block * n / row_blocks, (row_block + 1) * n / row_blocks) of each matrix per item.
  const int64_t most_blocks = std::max<int64_t>(1, std::min(n, get_num_threads()));
  const int64_t row_blocks =
      std::clamp<int64_t>(multiply_adds / kMultiplyAddsPerTask, 1, most_blocks);
  const int64_t row_stride_a = a.stride(1);  // between rows of a as the product reads it
  auto multiply = [&](int64_t first, int64_t last) {
    for (int64_t item = first; item < last; ++item) {
      const int64_t i = item / row_blocks, block = item % row_blocks;
      const int64_t row = n * block / row_blocks, rows = n * (block + 1) / row_blocks - row;
      gemm_one<T>(a_op, b_op, static_cast<blasint>(rows), static_cast<blasint>(m),
                  static_cast<blasint>(k), a_data + i * a_batch_stride + row * row_stride_a,
                  b_data + i * b_batch_stride, c_data + i * c_batch_stride + row * m,
                  static_cast<T>(beta));
    }
  };
  use_calling_thread_blas();
  const int64_t item_multiply_adds = std::max<int64_t>(1, multiply_adds / row_blocks);
  parallel_for(0, batch * row_blocks,
               std::max<int64_t>(1, kMultiplyAddsPerTask / item_multiply_adds), multiply);
}

void gemm(const Tensor& a, const Tensor& b, const Tensor& c, double beta) {
  if (onednn_gemm_enabled(a.dtype()) && onednn_gemm(a, b, c, beta)) return;
  if (c.dtype() != kFloat32 && c.dtype() != kFloat64) {
    MINIDL_INTERNAL_ASSERT(beta == 0, "cpu::gemm: a 16-bit result takes beta 0, got ", beta);
    const Tensor sums = empty(c.sizes(), c.options().dtype(kFloat32));
    gemm(a, b, sums, 0);
    Tensor(c).copy_(sums);  // rounded once
    return;
  }
  if (a.dtype() != c.dtype())  // 16-bit operands, float32 sums
    // to() keeps a dense operand's strides, so a transposed one stays a BLAS transpose.
    return gemm(a.to(kFloat32), b.to(kFloat32), c, beta);
  constexpr int64_t kMaxBlasInt = std::numeric_limits<blasint>::max();
  // Sizes and leading dimensions go to BLAS as blasint; batch strides stay on our side.
  for (const Tensor* operand : {&a, &b, &c})
    for (int64_t d = 1; d < 3; ++d)
      MINIDL_CHECK(operand->size(d) <= kMaxBlasInt && operand->stride(d) <= kMaxBlasInt,
                   "matmul: operand of shape ", operand->sizes(), " is too large for OpenBLAS");
  switch (c.dtype()) {
    case kFloat32: return gemm_typed<float>(a, b, c, beta);
    case kFloat64: return gemm_typed<double>(a, b, c, beta);
    default: MINIDL_INTERNAL_ASSERT(false, "cpu::gemm: unsupported dtype ", c.dtype());
  }
}

}  // namespace

}  // namespace minidl::cpu

namespace minidl {

const LinalgKernels LinalgKernels::kCpu{.gemm = cpu::gemm};

}  // namespace minidl
