// CUDA GEMM through cuBLAS (cublasGemmEx, cublasGemmStridedBatchedEx), LinalgKernels::kCuda
// (ops/linalg_kernels.h). Host code only, so a .cpp compiled in every build; without CUDA it
// defines nothing.
//
// cuBLAS is column-major. A row-major matrix X [r, c] read column-major is X^T, so the
// row-major product C = A B is computed as C^T = B^T A^T: cuBLAS's first operand is our b,
// its second our a, and the column-major C^T it writes (ldc = m) is our row-major c.
#include "minidl/core/cuda/build.h"

#if MINIDL_WITH_CUDA

#include <limits>

#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device.h"
#include "minidl/ops/cuda/blas_handle.h"
#include "minidl/ops/cuda/cublas_library.h"
#include "minidl/ops/linalg.h"
#include "minidl/ops/linalg_kernels.h"

namespace minidl::cuda {

namespace {

// One operand as cuBLAS reads it. A row-major matrix (unit column stride) read column-major is
// already the transpose the swapped product needs (no op); a matrix with unit row stride is
// column-major as stored and is transposed by cuBLAS.
struct CublasOperand {
  cublasOperation_t op;
  int leading_dim;
  long long batch_stride;
  const void* data;
};

CublasOperand cublas_operand(const Tensor& matrices) {
  const int64_t row_stride = matrices.stride(1), col_stride = matrices.stride(2);
  MINIDL_INTERNAL_ASSERT(col_stride == 1 || row_stride == 1, "gemm: operand of shape ",
                         matrices.sizes(), " and strides ", matrices.strides(),
                         " is not BLAS-compatible");
  const bool row_major = col_stride == 1;
  return {row_major ? CUBLAS_OP_N : CUBLAS_OP_T,
          static_cast<int>(row_major ? row_stride : col_stride),
          static_cast<long long>(matrices.stride(0)), matrices.data_ptr()};
}

cudaDataType_t cuda_data_type(DType dtype) {
  switch (dtype) {
    case kFloat32: return CUDA_R_32F;
    case kFloat64: return CUDA_R_64F;
    case kFloat16: return CUDA_R_16F;
    case kBFloat16: return CUDA_R_16BF;
    default: MINIDL_INTERNAL_ASSERT(false, "cuda::gemm: unsupported dtype ", dtype);
  }
  return CUDA_R_32F;
}

// float32 accumulation for every type but float64 (fp32 master math, fp16/bf16 inputs alike);
// TF32 tensor cores for float32 inputs only when allowed.
cublasComputeType_t compute_type(DType dtype, bool allow_tf32) {
  if (dtype == kFloat64) return CUBLAS_COMPUTE_64F;
  if (dtype == kFloat32 && allow_tf32) return CUBLAS_COMPUTE_32F_FAST_TF32;
  return CUBLAS_COMPUTE_32F;
}

void gemm(const Tensor& a, const Tensor& b, const Tensor& c, double beta) {
  const int64_t batch = c.size(0), n = c.size(1), m = c.size(2), k = a.size(2);
  constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
  for (const Tensor* operand : {&a, &b, &c})
    for (int64_t d = 1; d < 3; ++d)
      MINIDL_CHECK(operand->size(d) <= kMaxInt && operand->stride(d) <= kMaxInt,
                   "matmul: operand of shape ", operand->sizes(), " is too large for cuBLAS");
  MINIDL_CHECK(batch <= kMaxInt, "matmul: batch of ", batch, " matrices is too large for cuBLAS");

  const int device = c.device().index;
  DeviceGuard device_guard(device);  // a cuBLAS handle works on the device it was made for
  cublasHandle_t handle = blas_handle(device);

  const CublasOperand first = cublas_operand(b), second = cublas_operand(a);
  const cudaDataType_t data_type = cuda_data_type(c.dtype());
  const cublasComputeType_t compute = compute_type(c.dtype(), allow_tf32());
  // alpha and beta live on the host (the default pointer mode), in the compute type's precision.
  const double alpha_double = 1, beta_double = beta;
  const float alpha_float = 1, beta_float = static_cast<float>(beta);
  const bool double_scalars = compute == CUBLAS_COMPUTE_64F;
  const void* alpha = double_scalars ? static_cast<const void*>(&alpha_double) : &alpha_float;
  const void* beta_ptr = double_scalars ? static_cast<const void*>(&beta_double) : &beta_float;

  // cuBLAS's (m, n, k) for C^T [m, n] = B^T [m, k] A^T [k, n]; ldc = m.
  const int cublas_m = static_cast<int>(m), cublas_n = static_cast<int>(n);
  const int cublas_k = static_cast<int>(k);
  if (batch == 1) {
    MINIDL_CUBLAS_CHECK(cublas().gemm_ex(
        handle, first.op, second.op, cublas_m, cublas_n, cublas_k, alpha, first.data, data_type,
        first.leading_dim, second.data, data_type, second.leading_dim, beta_ptr, c.data_ptr(),
        data_type, cublas_m, compute, CUBLAS_GEMM_DEFAULT));
  } else {
    MINIDL_CUBLAS_CHECK(cublas().gemm_strided_batched_ex(
        handle, first.op, second.op, cublas_m, cublas_n, cublas_k, alpha, first.data, data_type,
        first.leading_dim, first.batch_stride, second.data, data_type, second.leading_dim,
        second.batch_stride, beta_ptr, c.data_ptr(), data_type, cublas_m,
        static_cast<long long>(n * m), static_cast<int>(batch), compute, CUBLAS_GEMM_DEFAULT));
  }
}

}  // namespace

}  // namespace minidl::cuda

namespace minidl {

const LinalgKernels LinalgKernels::kCuda{.gemm = cuda::gemm};

}  // namespace minidl

#endif  // MINIDL_WITH_CUDA
