#include "minidl/nn/modules/loss.h"

#include <ostream>

#include "minidl/nn/functional.h"

namespace minidl::nn {

CrossEntropyLossImpl::CrossEntropyLossImpl(const CrossEntropyLossOptions& options)
    : Module("CrossEntropyLoss"), options(options) {
  MINIDL_CHECK(options.label_smoothing() >= 0 && options.label_smoothing() < 1,
               "CrossEntropyLoss: expected label_smoothing in [0, 1), got ",
               options.label_smoothing());
}

Tensor CrossEntropyLossImpl::forward(const Tensor& logits, const Tensor& target) {
  return functional::cross_entropy(logits, target, options);
}

void CrossEntropyLossImpl::pretty_print(std::ostream& out) const { out << "CrossEntropyLoss()"; }

MSELossImpl::MSELossImpl(const MSELossOptions& options) : Module("MSELoss"), options(options) {}

Tensor MSELossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::mse_loss(input, target, options);
}

void MSELossImpl::pretty_print(std::ostream& out) const { out << "MSELoss()"; }

}  // namespace minidl::nn
