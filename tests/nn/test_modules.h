#pragma once
// Small modules shared by the nn tests.
#include "minidl/nn/nn.h"
#include "minidl/ops/elementwise.h"

namespace minidl::testing {

// A parameter and a buffer of its own between two children, to check the order of every
// traversal: own entries first, then each child's, in registration order.
struct TinyNetImpl : nn::Module {
  TinyNetImpl() {
    fc1 = register_module("fc1", nn::Linear(4, 3));
    scale = register_parameter("scale", ones({3}));
    steps = register_buffer("steps", zeros({}, kInt64));
    fc2 = register_module("fc2", nn::Linear(3, 2));
  }
  Tensor forward(const Tensor& x) { return fc2(relu(fc1(x)) * scale); }

  nn::Linear fc1{nullptr}, fc2{nullptr};
  Tensor scale, steps;
};
MINIDL_MODULE(TinyNet);

// Convolution, batch norm and a linear head: parameters and buffers of every kind.
struct ConvNetImpl : nn::Module {
  ConvNetImpl() {
    conv = register_module("conv", nn::Conv2d(nn::Conv2dOptions(2, 4, 3).padding(1).bias(false)));
    bn = register_module("bn", nn::BatchNorm2d(4));
    head = register_module("head", nn::Sequential{nn::Flatten(), nn::Linear(4 * 5 * 5, 3)});
  }
  Tensor forward(const Tensor& x) { return head(relu(bn(conv(x)))); }

  nn::Conv2d conv{nullptr};
  nn::BatchNorm2d bn{nullptr};
  nn::Sequential head{nullptr};
};
MINIDL_MODULE(ConvNet);

}  // namespace minidl::testing
