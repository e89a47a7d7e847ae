#include "minidl/models/resnet.h"

#include <ostream>

#include "minidl/nn/functional.h"
#include "minidl/nn/init.h"

namespace minidl::models {

namespace F = nn::functional;

ResNetImpl::ResNetImpl(const ResNetArchitecture& architecture, const ResNetOptions& options)
    : nn::Module(architecture.name.empty() ? "ResNet" : architecture.name),
      architecture(architecture),
      options(options) {
  const std::vector<int64_t>& widths = architecture.stage_channels;
  MINIDL_CHECK(!widths.empty() && widths.size() == architecture.blocks_per_stage.size(), name(),
               ": expected one block count per stage, got ", widths.size(), " stage widths and ",
               architecture.blocks_per_stage.size(), " block counts");
  MINIDL_CHECK(options.in_channels() > 0 && options.num_classes() > 0, name(),
               ": expected positive in_channels and num_classes, got ", options.in_channels(),
               " and ", options.num_classes());

  conv1 = register_module(
      "conv1",
      nn::Conv2d(nn::Conv2dOptions(options.in_channels(), widths[0], 3).padding(1).bias(false)));
  bn1 = register_module("bn1", nn::BatchNorm2d(widths[0]));
  int64_t channels = widths[0];
  for (size_t stage = 0; stage < widths.size(); ++stage) {
    MINIDL_CHECK(architecture.blocks_per_stage[stage] > 0, name(), ": stage ", stage + 1,
                 " needs at least one block, got ", architecture.blocks_per_stage[stage]);
    nn::Sequential blocks;
    for (int64_t block = 0; block < architecture.blocks_per_stage[stage]; ++block) {
      const int64_t stride = stage > 0 && block == 0 ? 2 : 1;
      blocks->push_back(BasicBlock(BasicBlockOptions(channels, widths[stage])
                                       .stride(stride)
                                       .shortcut(architecture.shortcut)));
      channels = widths[stage];
    }
    stages.push_back(register_module("layer" + std::to_string(stage + 1), blocks));
  }
  fc = register_module("fc", nn::Linear(channels, options.num_classes()));

  apply([](nn::Module& module) {
    if (auto* conv = dynamic_cast<nn::Conv2dImpl*>(&module))
      nn::init::kaiming_normal_(conv->weight, 0, nn::init::FanMode::FanOut,
                                nn::init::Nonlinearity::ReLU);
  });
}

Tensor ResNetImpl::forward(const Tensor& x) {
  Tensor out = bn1->forward_relu(conv1(x));  // relu(bn1(conv1(x))), [N, C0, H, W]
  for (const nn::Sequential& stage : stages) out = stage(out);
  out = F::flatten(F::adaptive_avg_pool2d(out, 1));  // [N, C_last]
  return fc(out);                                    // [N, num_classes]
}

void ResNetImpl::pretty_print(std::ostream& out) const {
  out << name() << "(in_channels=" << options.in_channels()
      << ", num_classes=" << options.num_classes() << ")";
}

}  // namespace minidl::models
