#pragma once
// ResNet for small images (CIFAR-10's 32x32), built from BasicBlocks (models/basic_block.h):
//
//   conv1   3x3 conv, stride 1, no bias: in_channels -> stage_channels[0]
//   bn1     then ReLU (no max pool: the images are already small)
//   layer1 ... layerK   stage k: blocks_per_stage[k] BasicBlocks with stage_channels[k]
//           channels; the first block of every stage after the first has stride 2
//   global average pool, then fc: Linear(stage_channels.back(), num_classes)
//
// Names match torchvision's resnet (conv1, bn1, layer1.0.conv1, layer2.0.downsample.0, fc), so
// a torchvision model with its stem changed the same way has the same state_dict keys.
// Initialisation follows torchvision: convolution weights kaiming_normal_(mode fan_out, ReLU),
// batch norm weight 1 and bias 0, fc PyTorch's Linear default.
//
// ResNet18 (models/resnet18.h) and ResNet20 (models/resnet20.h) are the two configurations in
// use; ResNetImpl takes any other.
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "minidl/core/arg.h"
#include "minidl/core/tensor.h"
#include "minidl/models/basic_block.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"
#include "minidl/nn/modules/batchnorm.h"
#include "minidl/nn/modules/conv.h"
#include "minidl/nn/modules/linear.h"
#include "minidl/nn/modules/sequential.h"

namespace minidl::models {

// What a user chooses about a ResNet.
struct ResNetOptions {
  MINIDL_ARG(int64_t, in_channels) = 3;
  MINIDL_ARG(int64_t, num_classes) = 10;
};

// What distinguishes one ResNet from another.
struct ResNetArchitecture {
  std::string name;                       // what printing calls it, e.g. "ResNet18"
  std::vector<int64_t> stage_channels;    // e.g. {64, 128, 256, 512}
  std::vector<int64_t> blocks_per_stage;  // e.g. {2, 2, 2, 2}
  ShortcutKind shortcut = ShortcutKind::Projection;
};

class ResNetImpl : public nn::Module {
 public:
  ResNetImpl(const ResNetArchitecture& architecture, const ResNetOptions& options);

  // x [N, in_channels, H, W] -> logits [N, num_classes]
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& out) const override;

  ResNetArchitecture architecture;
  ResNetOptions options;
  nn::Conv2d conv1{nullptr};
  nn::BatchNorm2d bn1{nullptr};
  std::vector<nn::Sequential> stages;  // registered as layer1, layer2, ...
  nn::Linear fc{nullptr};
};

MINIDL_MODULE(ResNet);

}  // namespace minidl::models
