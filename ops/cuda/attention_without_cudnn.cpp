// A build without the cuDNN frontend's headers (CMakeLists.txt, MINIDL_CUDNN_FRONTEND; or
// without CUDA): the functions of ops/cuda/attention_cudnn.h, which take no problem and say how
// to build them.
#include "minidl/core/error.h"
#include "minidl/ops/cuda/attention_cudnn.h"

namespace minidl::cuda {

namespace {

void refuse() {
  MINIDL_CHECK(
      false,
      "scaled_dot_product_attention: this build of minidl has no cuDNN attention: it was "
      "configured without the cuDNN frontend's headers (run tools/fetch_cudnn_frontend.sh, "
      "then configure again; docs/guide/transformers.md)");
}

}  // namespace

bool cudnn_attention_built() { return false; }

bool cudnn_attention_fits(const AttentionParams&, std::initializer_list<const Tensor*>,
                          AttentionPass) {
  return false;
}

bool cudnn_attention_fits_automatically(const AttentionParams&,
                                        std::initializer_list<const Tensor*>, AttentionPass) {
  return false;
}

void attention_forward_cudnn(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                             const Tensor&, const Tensor&, const AttentionParams&) {
  refuse();
}

void attention_backward_cudnn(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                              const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                              const Tensor&, const Tensor&, const AttentionParams&) {
  refuse();
}

}  // namespace minidl::cuda
