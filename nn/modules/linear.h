#pragma once
// nn::Linear: y = x W^T + b over the last dim of x, as torch::nn::Linear.
// weight [out_features, in_features]; bias [out_features] (absent with .bias(false)).
// Initialised as PyTorch: weight kaiming_uniform_(a = sqrt(5)), i.e. uniform on
// [-1/sqrt(in_features), 1/sqrt(in_features)], and bias uniform on the same bounds.
#include <cstdint>
#include <iosfwd>

#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"
#include "minidl/nn/options/linear.h"

namespace minidl::nn {

class LinearImpl : public Module {
 public:
  LinearImpl(int64_t in_features, int64_t out_features)
      : LinearImpl(LinearOptions(in_features, out_features)) {}
  explicit LinearImpl(const LinearOptions& options);

  // x [..., in_features] -> [..., out_features]
  Tensor forward(const Tensor& x);
  // Draws the weight and bias again, as at construction.
  void reset_parameters();
  void pretty_print(std::ostream& out) const override;

  LinearOptions options;
  Tensor weight;  // [out_features, in_features]
  Tensor bias;    // [out_features], undefined without bias
};

MINIDL_MODULE(Linear);

}  // namespace minidl::nn
