#pragma once
// LeNet-5 for 1x28x28 images (MNIST, Fashion-MNIST), 61,706 parameters for 10 classes:
//
//   conv1  Conv2d(1, 6, 5, padding 2)   [N, 1, 28, 28] -> [N, 6, 28, 28]   -> act, pool -> 14x14
//   conv2  Conv2d(6, 16, 5)             [N, 6, 14, 14] -> [N, 16, 10, 10]  -> act, pool -> 5x5
//   fc1    Linear(400, 120) -> act
//   fc2    Linear(120, 84)  -> act
//   fc3    Linear(84, num_classes)      logits
//
// act and pool are ReLU and 2x2 max pooling by default, or, with .classic(true), the sigmoid
// and 2x2 average pooling of LeCun et al. (1998). Parameter names are those of the usual
// PyTorch LeNet (conv1.weight, ..., fc3.bias); the layers use PyTorch's default initialisation.
#include <cstdint>
#include <iosfwd>

#include "minidl/core/arg.h"
#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"
#include "minidl/nn/modules/conv.h"
#include "minidl/nn/modules/linear.h"

namespace minidl::models {

struct LeNetOptions {
  MINIDL_ARG(int64_t, num_classes) = 10;
  // Sigmoid activations and average pooling (the 1998 network) instead of ReLU and max pooling.
  MINIDL_ARG(bool, classic) = false;
};

class LeNetImpl : public nn::Module {
 public:
  explicit LeNetImpl(const LeNetOptions& options = {});

  // x [N, 1, 28, 28] -> logits [N, num_classes]
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& out) const override;

  LeNetOptions options;
  nn::Conv2d conv1{nullptr}, conv2{nullptr};
  nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};

 private:
  Tensor activation(const Tensor& x) const;
  Tensor pool(const Tensor& x) const;
};

MINIDL_MODULE(LeNet);

}  // namespace minidl::models
