#pragma once
// nn::GroupNorm: normalisation over groups of channels of [N, C, *], as torch::nn::GroupNorm:
// the C channels are split into num_groups groups, each (sample, group) is normalised by its own
// mean and biased variance, then scaled and shifted per channel. The same in training and
// evaluation. Registers, as PyTorch (so state_dict keys match):
//   parameters  weight [num_channels] (init 1), bias [num_channels] (init 0)   when affine
#include <cstdint>
#include <iosfwd>

#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"
#include "minidl/nn/options/normalization.h"

namespace minidl::nn {

class GroupNormImpl : public Module {
 public:
  GroupNormImpl(int64_t num_groups, int64_t num_channels)
      : GroupNormImpl(GroupNormOptions(num_groups, num_channels)) {}
  explicit GroupNormImpl(const GroupNormOptions& options);

  // x [N, num_channels, *] -> the same shape (ops/group_norm.h).
  Tensor forward(const Tensor& x);
  // weight 1 and bias 0.
  void reset_parameters();
  void pretty_print(std::ostream& out) const override;

  GroupNormOptions options;
  Tensor weight;  // [num_channels], undefined without affine
  Tensor bias;    // [num_channels], undefined without affine
};

MINIDL_MODULE(GroupNorm);

}  // namespace minidl::nn
