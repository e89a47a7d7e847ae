#pragma once
// ResNet-20 of He et al. (2016), section 4.2, for CIFAR-10: a 3x3 stem with 16 channels, three
// stages of 3 BasicBlocks with 16, 32 and 64 channels, parameter-free "option A" shortcuts
// (stride-2 subsampling plus zero channels), global average pool, linear. 269,722 parameters
// for 3 input channels and 10 classes: the ResNet that trains in minutes on a CPU. Layout and
// names: models/resnet.h.
#include "minidl/models/resnet.h"

namespace minidl::models {

class ResNet20Impl : public ResNetImpl {
 public:
  explicit ResNet20Impl(const ResNetOptions& options = {});
};

MINIDL_MODULE(ResNet20);

}  // namespace minidl::models
