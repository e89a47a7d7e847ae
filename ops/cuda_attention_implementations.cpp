#include "minidl/ops/cuda_attention_implementations.h"

#include <cstdlib>
#include <string>

#include "minidl/core/cuda/build.h"
#include "minidl/core/error.h"
#include "minidl/ops/cuda/attention_cudnn.h"
#include "minidl/ops/cuda/attention_tensor_cores.h"

namespace minidl {

CudaAttention parse_cuda_attention(std::string_view value) {
  if (value.empty() || value == "auto") return CudaAttention::Auto;
  if (value == "cuda-cores") return CudaAttention::CudaCores;
  if (value == "tensor-cores") return CudaAttention::TensorCores;
  MINIDL_CHECK(value == "cudnn",
               "MINIDL_CUDA_ATTENTION: expected \"auto\", \"cudnn\", \"tensor-cores\" or "
               "\"cuda-cores\" (or unset), got \"",
               std::string(value), "\"");
  return CudaAttention::Cudnn;
}

CudaAttention selected_cuda_attention() {
  static const CudaAttention selected = [] {
    const char* value = std::getenv("MINIDL_CUDA_ATTENTION");
    return parse_cuda_attention(value == nullptr ? "" : value);
  }();
  return selected;
}

// The cuda:: functions are named only in discarded branches of a CPU-only build, which needs
// no definitions of them (core/cuda/build.h).
const AttentionKernels& tensor_core_attention_kernels() {
  if constexpr (cuda::kBuilt) {
    static const AttentionKernels kernels{.forward = cuda::attention_forward_tensor_cores,
                                          .backward = cuda::attention_backward_tensor_cores};
    return kernels;
  } else {
    static const AttentionKernels none{.forward = nullptr, .backward = nullptr};
    return none;
  }
}

const AttentionKernels& cudnn_attention_kernels() {
  if constexpr (cuda::kBuilt) {
    static const AttentionKernels kernels{.forward = cuda::attention_forward_cudnn,
                                          .backward = cuda::attention_backward_cudnn};
    return kernels;
  } else {
    static const AttentionKernels none{.forward = nullptr, .backward = nullptr};
    return none;
  }
}

const AttentionKernels& cuda_core_attention_kernels() {
  if constexpr (cuda::kBuilt) {
    return cuda::cuda_core_attention_kernels();
  } else {
    static const AttentionKernels none{.forward = nullptr, .backward = nullptr};
    return none;
  }
}

bool tensor_core_attention_fits(const AttentionParams& params,
                                std::initializer_list<const Tensor*> operands) {
  if constexpr (cuda::kBuilt)
    return cuda::tensor_core_attention_fits(params, operands);
  else
    return false;
}

bool cudnn_attention_fits(const AttentionParams& params,
                          std::initializer_list<const Tensor*> operands, AttentionPass pass) {
  if constexpr (cuda::kBuilt)
    return cuda::cudnn_attention_fits(params, operands, pass);
  else
    return false;
}

bool cudnn_attention_built() {
  if constexpr (cuda::kBuilt)
    return cuda::cudnn_attention_built();
  else
    return false;
}

}  // namespace minidl
