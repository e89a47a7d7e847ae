#include "minidl/models/basic_block.h"

#include <ostream>

#include "minidl/ops/elementwise.h"
#include "minidl/ops/shape.h"

namespace minidl::models {

BasicBlockImpl::BasicBlockImpl(const BasicBlockOptions& options)
    : nn::Module("BasicBlock"), options(options) {
  const int64_t in = options.in_channels(), out = options.out_channels();
  MINIDL_CHECK(in > 0 && out > 0 && options.stride() > 0, "BasicBlock: expected positive ",
               "channel counts and stride, got in_channels ", in, ", out_channels ", out,
               ", stride ", options.stride());
  MINIDL_CHECK(options.shortcut() != ShortcutKind::ZeroPad || out >= in, "BasicBlock: a ",
               "zero-padding shortcut can only add channels, got in_channels ", in,
               " > out_channels ", out);
  conv1 = register_module(
      "conv1",
      nn::Conv2d(nn::Conv2dOptions(in, out, 3).stride(options.stride()).padding(1).bias(false)));
  bn1 = register_module("bn1", nn::BatchNorm2d(out));
  conv2 =
      register_module("conv2", nn::Conv2d(nn::Conv2dOptions(out, out, 3).padding(1).bias(false)));
  bn2 = register_module("bn2", nn::BatchNorm2d(out));
  if (options.shortcut() == ShortcutKind::Projection && changes_shape()) {
    downsample = register_module(
        "downsample",
        nn::Sequential{
            nn::Conv2d(nn::Conv2dOptions(in, out, 1).stride(options.stride()).bias(false)),
            nn::BatchNorm2d(out)});
  }
}

bool BasicBlockImpl::changes_shape() const {
  return options.stride() != 1 || options.in_channels() != options.out_channels();
}

Tensor BasicBlockImpl::shortcut(const Tensor& x) {
  if (!changes_shape()) return x;
  if (options.shortcut() == ShortcutKind::Projection) return downsample(x);
  // Option A: keep every stride-th pixel, then add zero channels, half before and half after
  // (as the reference CIFAR code's F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, planes // 4, planes //
  // 4))).
  const int64_t stride = options.stride();
  Tensor sampled = x.slice(2, 0, x.size(2), stride).slice(3, 0, x.size(3), stride);
  const int64_t extra = options.out_channels() - options.in_channels();
  if (extra == 0) return sampled;
  const int64_t before = extra / 2, after = extra - before;
  const int64_t n = sampled.size(0), h = sampled.size(2), w = sampled.size(3);
  // Zeros in x's layout, so that cat keeps a channels-last x channels-last, and the residual
  // add reads both operands in one layout (the flat loop, not the strided one).
  const MemoryFormat format = x.suggest_memory_format();
  const auto zero_channels = [&](int64_t channels) {
    return empty({n, channels, h, w}, sampled.options(), format).zero_();
  };
  std::vector<Tensor> parts;
  if (before > 0) parts.push_back(zero_channels(before));
  parts.push_back(sampled);
  parts.push_back(zero_channels(after));
  return cat(parts, 1);
}

// relu(bn1(conv1(x))), then relu(bn2(conv2(out)) + shortcut(x)): each batch norm with its ReLU
// (and the sum) as one node, with the same bits as the ops apart and without their tensors.
Tensor BasicBlockImpl::forward(const Tensor& x) {
  const Tensor out = bn1->forward_relu(conv1(x));
  return bn2->forward_relu(conv2(out), shortcut(x));
}

void BasicBlockImpl::pretty_print(std::ostream& out) const {
  out << "BasicBlock(" << options.in_channels() << ", " << options.out_channels()
      << ", stride=" << options.stride();
  if (changes_shape())
    out << (options.shortcut() == ShortcutKind::Projection ? ", shortcut=projection"
                                                           : ", shortcut=zero_pad");
  out << ")";
}

}  // namespace minidl::models
