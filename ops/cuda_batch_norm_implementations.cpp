#include "minidl/ops/cuda_batch_norm_implementations.h"

#include <atomic>
#include <cstdlib>
#include <string>

#include "minidl/core/error.h"

namespace minidl {

namespace {

// The choice, made from the environment at the first use unless set before.
std::atomic<CudaBatchNorm>& choice() {
  static std::atomic<CudaBatchNorm> selected = [] {
    const char* value = std::getenv("MINIDL_CUDA_BATCH_NORM");
    return parse_cuda_batch_norm(value == nullptr ? "" : value);
  }();
  return selected;
}

}  // namespace

CudaBatchNorm parse_cuda_batch_norm(std::string_view value) {
  if (value.empty() || value == "minidl") return CudaBatchNorm::Minidl;
  MINIDL_CHECK(value == "cudnn",
               "MINIDL_CUDA_BATCH_NORM: expected \"minidl\" or \"cudnn\" (or unset), got \"",
               std::string(value), "\"");
  return CudaBatchNorm::Cudnn;
}

CudaBatchNorm cuda_batch_norm() { return choice().load(); }

void set_cuda_batch_norm(CudaBatchNorm implementation) { choice().store(implementation); }

}  // namespace minidl
