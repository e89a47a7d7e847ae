#pragma once
// The residual block of ResNet-18/34 and of the CIFAR ResNets (He et al., 2016):
//
//   out = relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x))
//
// conv1 is 3x3 with the block's stride, conv2 3x3 with stride 1, both without bias (the batch
// norm that follows has one). The shortcut is the identity when the shape is unchanged; when
// the block changes the channel count or the resolution it is
//   - Projection ("option B"): `downsample`, a Sequential of a 1x1 convolution with the stride
//     and a BatchNorm2d, named as torchvision's (layer2.0.downsample.0.weight, ...);
//   - ZeroPad ("option A", the CIFAR ResNet-20/32/56 of the paper): parameter-free, x sampled
//     with the stride (x[:, :, ::s, ::s]) and zero channels added on both sides.
#include <cstdint>
#include <iosfwd>

#include "minidl/core/arg.h"
#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"
#include "minidl/nn/modules/batchnorm.h"
#include "minidl/nn/modules/conv.h"
#include "minidl/nn/modules/sequential.h"

namespace minidl::models {

enum class ShortcutKind { Projection, ZeroPad };

struct BasicBlockOptions {
  BasicBlockOptions(int64_t in_channels, int64_t out_channels)
      : in_channels_(in_channels), out_channels_(out_channels) {}
  MINIDL_ARG(int64_t, in_channels);
  MINIDL_ARG(int64_t, out_channels);
  MINIDL_ARG(int64_t, stride) = 1;
  // How the shortcut matches a changed shape (see above).
  MINIDL_ARG(ShortcutKind, shortcut) = ShortcutKind::Projection;
};

class BasicBlockImpl : public nn::Module {
 public:
  explicit BasicBlockImpl(const BasicBlockOptions& options);

  // x [N, in_channels, H, W] -> [N, out_channels, H / stride, W / stride]
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& out) const override;

  BasicBlockOptions options;
  nn::Conv2d conv1{nullptr};
  nn::BatchNorm2d bn1{nullptr};
  nn::Conv2d conv2{nullptr};
  nn::BatchNorm2d bn2{nullptr};
  nn::Sequential downsample{nullptr};  // empty unless a Projection shortcut changes the shape

 private:
  bool changes_shape() const;
  Tensor shortcut(const Tensor& x);
};

MINIDL_MODULE(BasicBlock);

}  // namespace minidl::models
