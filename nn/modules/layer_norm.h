#pragma once
// nn::LayerNorm: normalisation of each row over the input's last dims (normalized_shape), as
// torch::nn::LayerNorm: y = (x - mean) / sqrt(var + eps) * weight + bias, with the mean and
// biased variance of each row. The same in training and evaluation. Registers, as PyTorch (so
// state_dict keys match):
//   parameters  weight [normalized_shape] (init 1)      when elementwise_affine
//               bias [normalized_shape] (init 0)        when elementwise_affine and bias
#include <iosfwd>

#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"
#include "minidl/nn/options/normalization.h"

namespace minidl::nn {

class LayerNormImpl : public Module {
 public:
  explicit LayerNormImpl(Shape normalized_shape)
      : LayerNormImpl(LayerNormOptions(std::move(normalized_shape))) {}
  explicit LayerNormImpl(const LayerNormOptions& options);

  // x [..., *normalized_shape] -> the same shape.
  Tensor forward(const Tensor& x);
  // weight 1 and bias 0.
  void reset_parameters();
  void pretty_print(std::ostream& out) const override;

  LayerNormOptions options;
  Tensor weight;  // [normalized_shape], undefined without elementwise_affine
  Tensor bias;    // [normalized_shape], undefined without elementwise_affine or bias
};

MINIDL_MODULE(LayerNorm);

}  // namespace minidl::nn
