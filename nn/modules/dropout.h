#pragma once
// nn::Dropout: in training mode zeroes each element with probability p and scales the rest by
// 1 / (1 - p); in evaluation mode (module.eval()) returns its input. As torch::nn::Dropout.
#include <iosfwd>

#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"
#include "minidl/nn/options/dropout.h"

namespace minidl::nn {

class DropoutImpl : public Module {
 public:
  explicit DropoutImpl(const DropoutOptions& options = {});
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& out) const override;
  // A mask drawn inside a replay would repeat the captured step's.
  bool is_cuda_graph_safe() const override { return options.p() == 0; }

  DropoutOptions options;
};

MINIDL_MODULE(Dropout);

}  // namespace minidl::nn
