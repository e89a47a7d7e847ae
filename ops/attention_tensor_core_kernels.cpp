#include "minidl/ops/attention_tensor_core_kernels.h"

#include "minidl/core/cuda/build.h"
#include "minidl/ops/cuda/attention_tensor_cores.h"

namespace minidl {

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

bool tensor_core_attention_selected() {
  if constexpr (cuda::kBuilt)
    return cuda::tensor_core_attention_selected();
  else
    return false;
}

}  // namespace minidl
