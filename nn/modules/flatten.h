#pragma once
// nn::Flatten: flattens dims [start_dim, end_dim] into one (by default all but the batch dim:
// [N, C, H, W] -> [N, C * H * W]), as torch::nn::Flatten. No parameters.
#include <iosfwd>

#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"
#include "minidl/nn/options/flatten.h"

namespace minidl::nn {

class FlattenImpl : public Module {
 public:
  explicit FlattenImpl(const FlattenOptions& options = {});
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& out) const override;

  FlattenOptions options;
};

MINIDL_MODULE(Flatten);

}  // namespace minidl::nn
