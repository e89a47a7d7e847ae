// A build without oneDNN (-DMINIDL_ONEDNN=OFF, or libdnnl-dev not found): every CPU convolution
// runs on im2col + OpenBLAS (ops/cpu/conv.cpp), every batch normalisation on ops/cpu/norm.cpp,
// every matrix product on OpenBLAS (bfloat16 converted to float32 first: ops/cpu/linalg.cpp).
#include "minidl/ops/cpu/onednn_batch_norm.h"
#include "minidl/ops/cpu/onednn_conv.h"
#include "minidl/ops/cpu/onednn_matmul.h"
#include "minidl/ops/onednn.h"

namespace minidl {

bool onednn_available() { return false; }

int64_t onednn_primitives_created() { return 0; }

bool onednn_bfloat16_instructions() { return false; }

namespace cpu {

bool onednn_gemm_enabled(DType) { return false; }

bool onednn_gemm(const Tensor&, const Tensor&, const Tensor&, double) { return false; }

std::optional<Tensor> onednn_conv2d_forward(const Tensor&, const Tensor&, const Tensor&,
                                            const Conv2dParams&) {
  return std::nullopt;
}

std::optional<Tensor> onednn_conv2d_input_grad(const Tensor&, const Tensor&, const Tensor&,
                                               const Conv2dParams&) {
  return std::nullopt;
}

std::optional<OnednnConvWeightGrads> onednn_conv2d_weight_grad(const Tensor&, const Tensor&,
                                                               const Tensor&, const Conv2dParams&,
                                                               bool) {
  return std::nullopt;
}

std::optional<OnednnBatchNormStatistics> onednn_batch_norm_forward(const Tensor&, const Tensor&,
                                                                   const Tensor&, const Tensor&,
                                                                   const Tensor&, double, double) {
  return std::nullopt;
}

std::optional<OnednnBatchNormGradients> onednn_batch_norm_backward(const Tensor&, const Tensor&,
                                                                   const Tensor&, const Tensor&,
                                                                   const Tensor&, bool, double) {
  return std::nullopt;
}

}  // namespace cpu

}  // namespace minidl
