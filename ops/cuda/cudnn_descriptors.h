#pragma once
// What every cuDNN call of minidl builds (include from .cpp files of CUDA builds only: it
// includes cudnn.h): the dtype as cuDNN names it, alpha and beta as cuDNN reads them, a 4-D
// tensor descriptor as a host struct made per call, and tensors laid out and aligned as cuDNN
// reads them. Used by ops/cuda/conv.cpp and
// ops/cuda/batch_norm_cudnn.cpp.
#include <cudnn.h>

#include <climits>
#include <cstdint>

#include "minidl/core/cuda/check.h"
#include "minidl/core/error.h"
#include "minidl/core/tensor.h"

namespace minidl::cuda {

// A size or stride as cuDNN's int arguments take it; callers check the sizes first.
inline int cudnn_int(int64_t value) {
  MINIDL_INTERNAL_ASSERT(value >= 0 && value <= INT_MAX, "cuDNN: ", value,
                         " does not fit cuDNN's int arguments");
  return static_cast<int>(value);
}

inline cudnnDataType_t cudnn_data_type(DType dtype) {
  switch (dtype) {
    case kFloat32: return CUDNN_DATA_FLOAT;
    case kFloat64: return CUDNN_DATA_DOUBLE;
    case kFloat16: return CUDNN_DATA_HALF;
    case kBFloat16: return CUDNN_DATA_BFLOAT16;
    default: MINIDL_INTERNAL_ASSERT(false, "cuDNN: unsupported dtype ", dtype);
  }
  return CUDNN_DATA_FLOAT;
}

// A scaling factor (alpha, beta) as cuDNN reads it: double for double data, float otherwise.
class ScalingFactor {
 public:
  ScalingFactor(double value, DType dtype)
      : as_float_(static_cast<float>(value)), as_double_(value), dtype_(dtype) {}
  const void* get() const {
    return dtype_ == kFloat64 ? static_cast<const void*>(&as_double_) : &as_float_;
  }

 private:
  float as_float_;
  double as_double_;
  DType dtype_;
};

class TensorDescriptor {
 public:
  // A 4-D [N, C, H, W] tensor of `dtype` laid out in `layout`.
  TensorDescriptor(const Shape& sizes, DType dtype, MemoryFormat layout) {
    MINIDL_CUDNN_CHECK(cudnnCreateTensorDescriptor(&descriptor_));
    const Shape strides = strides_for(sizes, layout);
    MINIDL_CUDNN_CHECK(cudnnSetTensor4dDescriptorEx(
        descriptor_, cudnn_data_type(dtype), cudnn_int(sizes[0]), cudnn_int(sizes[1]),
        cudnn_int(sizes[2]), cudnn_int(sizes[3]), cudnn_int(strides[0]), cudnn_int(strides[1]),
        cudnn_int(strides[2]), cudnn_int(strides[3])));
  }
  TensorDescriptor() { MINIDL_CUDNN_CHECK(cudnnCreateTensorDescriptor(&descriptor_)); }
  ~TensorDescriptor() { (void)cudnnDestroyTensorDescriptor(descriptor_); }
  TensorDescriptor(const TensorDescriptor&) = delete;
  TensorDescriptor& operator=(const TensorDescriptor&) = delete;
  cudnnTensorDescriptor_t get() const { return descriptor_; }

 private:
  cudnnTensorDescriptor_t descriptor_ = nullptr;
};

// cuDNN's vectorised kernels read 16-byte aligned data. Caching-allocator blocks are aligned,
// but a view may start anywhere in its storage.
inline constexpr uintptr_t kCudnnAlignmentBytes = 16;

inline bool cudnn_aligned(const Tensor& t) {
  return reinterpret_cast<uintptr_t>(t.data_ptr()) % kCudnnAlignmentBytes == 0;
}

// The 4-D `t` laid out in `layout` (NCHW or NHWC strides) and 16-byte aligned; itself when it
// already is.
inline Tensor cudnn_ready(const Tensor& t, MemoryFormat layout) {
  Tensor laid_out = t.contiguous(layout);
  if (cudnn_aligned(laid_out)) return laid_out;
  Tensor aligned = empty(t.sizes(), t.options(), layout);
  return aligned.copy_(laid_out);
}

}  // namespace minidl::cuda
