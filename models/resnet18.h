#pragma once
// ResNet-18 in its CIFAR form: 3x3 stem without max pool, four stages of 2 BasicBlocks with
// 64, 128, 256 and 512 channels, 1x1 convolution + batch norm projection shortcuts where the
// shape changes, global average pool, linear. 11,173,962 parameters for 3 input channels and
// 10 classes. Layout and names: models/resnet.h.
//
//   models::ResNet18 net;                                             // CIFAR-10
//   models::ResNet18 gray(models::ResNetOptions().in_channels(1).num_classes(100));
#include "minidl/models/resnet.h"

namespace minidl::models {

class ResNet18Impl : public ResNetImpl {
 public:
  explicit ResNet18Impl(const ResNetOptions& options = {});
};

MINIDL_MODULE(ResNet18);

}  // namespace minidl::models
