#include "minidl/models/resnet20.h"

namespace minidl::models {

ResNet20Impl::ResNet20Impl(const ResNetOptions& options)
    : ResNetImpl(ResNetArchitecture{.name = "ResNet20",
                                    .stage_channels = {16, 32, 64},
                                    .blocks_per_stage = {3, 3, 3},
                                    .shortcut = ShortcutKind::ZeroPad},
                 options) {}

}  // namespace minidl::models
