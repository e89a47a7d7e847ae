#include "minidl/models/resnet18.h"

namespace minidl::models {

ResNet18Impl::ResNet18Impl(const ResNetOptions& options)
    : ResNetImpl(ResNetArchitecture{.name = "ResNet18",
                                    .stage_channels = {64, 128, 256, 512},
                                    .blocks_per_stage = {2, 2, 2, 2},
                                    .shortcut = ShortcutKind::Projection},
                 options) {}

}  // namespace minidl::models
