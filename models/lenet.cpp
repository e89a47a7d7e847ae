#include "minidl/models/lenet.h"

#include <ostream>

#include "minidl/nn/functional.h"

namespace minidl::models {

namespace F = nn::functional;

namespace {
constexpr int64_t kImageSize = 28;
constexpr int64_t kFlatFeatures = 16 * 5 * 5;  // conv2's output after the second pool
}  // namespace

LeNetImpl::LeNetImpl(const LeNetOptions& options) : nn::Module("LeNet"), options(options) {
  MINIDL_CHECK(options.num_classes() > 0, "LeNet: expected a positive num_classes, got ",
               options.num_classes());
  conv1 = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(1, 6, 5).padding(2)));
  conv2 = register_module("conv2", nn::Conv2d(6, 16, 5));
  fc1 = register_module("fc1", nn::Linear(kFlatFeatures, 120));
  fc2 = register_module("fc2", nn::Linear(120, 84));
  fc3 = register_module("fc3", nn::Linear(84, options.num_classes()));
}

Tensor LeNetImpl::activation(const Tensor& x) const {
  return options.classic() ? F::sigmoid(x) : F::relu(x);
}

Tensor LeNetImpl::pool(const Tensor& x) const {
  return options.classic() ? F::avg_pool2d(x, nn::AvgPool2dOptions(2))
                           : F::max_pool2d(x, nn::MaxPool2dOptions(2));
}

Tensor LeNetImpl::forward(const Tensor& x) {
  MINIDL_CHECK(x.dim() == 4 && x.size(1) == 1 && x.size(2) == kImageSize && x.size(3) == kImageSize,
               "LeNet: expected input of shape [N, 1, 28, 28], got ", x.sizes());
  Tensor out = pool(activation(conv1(x)));  // [N, 6, 14, 14]
  out = pool(activation(conv2(out)));       // [N, 16, 5, 5]
  out = F::flatten(out);                    // [N, 400]
  out = activation(fc1(out));               // [N, 120]
  out = activation(fc2(out));               // [N, 84]
  return fc3(out);                          // [N, num_classes]
}

void LeNetImpl::pretty_print(std::ostream& out) const {
  out << "LeNet(num_classes=" << options.num_classes()
      << (options.classic() ? ", activation=sigmoid, pooling=average)"
                            : ", activation=relu, pooling=max)");
}

}  // namespace minidl::models
