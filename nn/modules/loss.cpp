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

namespace {

// A loss's weight tensor, when given, is a buffer, so that to(device) moves it (and the options'
// alias with it: the module converts its tensors in place).
void register_weight(Module& loss, const char* name, const Tensor& weight) {
  if (weight.defined()) loss.register_buffer(name, weight);
}

}  // namespace

NLLLossImpl::NLLLossImpl(const NLLLossOptions& options) : Module("NLLLoss"), options(options) {
  MINIDL_CHECK(!options.weight().defined() || options.weight().dim() == 1,
               "NLLLoss: expected a weight of one value per class, 1-D, got weight of shape ",
               options.weight().sizes());
  register_weight(*this, "weight", options.weight());
}

Tensor NLLLossImpl::forward(const Tensor& log_probs, const Tensor& target) {
  return functional::nll_loss(log_probs, target, options);
}

void NLLLossImpl::pretty_print(std::ostream& out) const { out << "NLLLoss()"; }

BCEWithLogitsLossImpl::BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& options)
    : Module("BCEWithLogitsLoss"), options(options) {
  register_weight(*this, "weight", options.weight());
  register_weight(*this, "pos_weight", options.pos_weight());
}

Tensor BCEWithLogitsLossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::binary_cross_entropy_with_logits(input, target, options);
}

void BCEWithLogitsLossImpl::pretty_print(std::ostream& out) const { out << "BCEWithLogitsLoss()"; }

BCELossImpl::BCELossImpl(const BCELossOptions& options) : Module("BCELoss"), options(options) {
  register_weight(*this, "weight", options.weight());
}

Tensor BCELossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::binary_cross_entropy(input, target, options);
}

void BCELossImpl::pretty_print(std::ostream& out) const { out << "BCELoss()"; }

L1LossImpl::L1LossImpl(const L1LossOptions& options) : Module("L1Loss"), options(options) {}

Tensor L1LossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::l1_loss(input, target, options);
}

void L1LossImpl::pretty_print(std::ostream& out) const { out << "L1Loss()"; }

SmoothL1LossImpl::SmoothL1LossImpl(const SmoothL1LossOptions& options)
    : Module("SmoothL1Loss"), options(options) {
  MINIDL_CHECK(options.beta() >= 0, "SmoothL1Loss: expected beta >= 0, got ", options.beta());
}

Tensor SmoothL1LossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::smooth_l1_loss(input, target, options);
}

void SmoothL1LossImpl::pretty_print(std::ostream& out) const { out << "SmoothL1Loss()"; }

HuberLossImpl::HuberLossImpl(const HuberLossOptions& options)
    : Module("HuberLoss"), options(options) {
  MINIDL_CHECK(options.delta() > 0, "HuberLoss: expected delta > 0, got ", options.delta());
}

Tensor HuberLossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::huber_loss(input, target, options);
}

void HuberLossImpl::pretty_print(std::ostream& out) const { out << "HuberLoss()"; }

KLDivLossImpl::KLDivLossImpl(const KLDivLossOptions& options)
    : Module("KLDivLoss"), options(options) {}

Tensor KLDivLossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::kl_div(input, target, options);
}

void KLDivLossImpl::pretty_print(std::ostream& out) const { out << "KLDivLoss()"; }

}  // namespace minidl::nn
