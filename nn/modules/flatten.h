#pragma once
// nn::Flatten: flattens dims [start_dim, end_dim] into one (by default all but the batch dim:
// [N, C, H, W] -> [N, C * H * W]), as torch::nn::Flatten. No parameters.
#include <iosfwd>

#include "core/tensor.h"
#include "nn/module.h"
#include "nn/module_holder.h"
#include "nn/options/flatten.h"

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
