#include "minidl/nn/modules/batchnorm.h"

#include <ostream>
#include <utility>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/nn/functional.h"
#include "minidl/nn/init.h"
#include "minidl/ops/norm.h"

namespace minidl::nn {

BatchNormImplBase::BatchNormImplBase(std::string name, const BatchNorm2dOptions& options)
    : Module(std::move(name)), options(options) {
  const int64_t channels = options.num_features();
  const std::string& layer = this->name();
  MINIDL_CHECK(channels > 0, layer, ": expected a positive num_features, got ", channels);
  MINIDL_CHECK(options.eps() > 0, layer, ": expected eps > 0, got ", options.eps());
  MINIDL_CHECK(!options.momentum() || (*options.momentum() >= 0 && *options.momentum() <= 1), layer,
               ": expected momentum in [0, 1] (or std::nullopt for a cumulative ", "average), got ",
               options.momentum().value_or(0));
  if (options.affine()) {
    weight = register_parameter("weight", empty({channels}));
    bias = register_parameter("bias", empty({channels}));
  }
  if (options.track_running_stats()) {
    running_mean = register_buffer("running_mean", empty({channels}));
    running_var = register_buffer("running_var", empty({channels}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, kInt64));
  }
  reset_parameters();
}

void BatchNormImplBase::reset_running_stats() {
  if (!options.track_running_stats()) return;
  init::zeros_(running_mean);
  init::ones_(running_var);
  init::zeros_(num_batches_tracked);
}

void BatchNormImplBase::reset_parameters() {
  reset_running_stats();
  if (options.affine()) {
    init::ones_(weight);
    init::zeros_(bias);
  }
}

Tensor BatchNormImplBase::normalize(const Tensor& x, Activation activation,
                                    const Tensor& residual) {
  // As PyTorch's _BatchNorm.forward: the batch's statistics normalise in training, and in
  // evaluation too when there are no running statistics to use.
  double momentum = options.momentum().value_or(0.0);
  if (is_training() && options.track_running_stats()) {
    {
      NoGradGuard no_grad;
      num_batches_tracked.add_(1);
    }
    // The cumulative average weighs batch k by 1/k (reads the count back from the device).
    if (!options.momentum()) momentum = 1.0 / num_batches_tracked.item<double>();
  }
  const bool use_batch_statistics = is_training() || !options.track_running_stats();
  if (activation == Activation::Relu)
    return batch_norm_relu(x, running_mean, running_var, weight, bias, use_batch_statistics,
                           momentum, options.eps(), residual);
  return functional::batch_norm(x, running_mean, running_var,
                                BatchNormFuncOptions()
                                    .weight(weight)
                                    .bias(bias)
                                    .training(use_batch_statistics)
                                    .momentum(momentum)
                                    .eps(options.eps()));
}

// As PyTorch's repr: BatchNorm2d(64, eps=1e-05, momentum=0.1, affine=true,
// track_running_stats=true).
void BatchNormImplBase::pretty_print(std::ostream& out) const {
  out << name() << "(" << options.num_features() << ", eps=" << options.eps() << ", momentum=";
  if (options.momentum())
    out << *options.momentum();
  else
    out << "none";
  out << ", affine=" << (options.affine() ? "true" : "false")
      << ", track_running_stats=" << (options.track_running_stats() ? "true" : "false") << ")";
}

Tensor BatchNorm2dImpl::forward(const Tensor& x) {
  MINIDL_CHECK(x.dim() == 4 && x.size(1) == options.num_features(), "BatchNorm2d: expected ",
               "input of shape [N, ", options.num_features(), " (num_features), H, W], got ",
               x.sizes());
  return normalize(x);
}

Tensor BatchNorm2dImpl::forward_relu(const Tensor& x, const Tensor& residual) {
  MINIDL_CHECK(x.dim() == 4 && x.size(1) == options.num_features(), "BatchNorm2d: expected ",
               "input of shape [N, ", options.num_features(), " (num_features), H, W], got ",
               x.sizes());
  return normalize(x, Activation::Relu, residual);
}

Tensor BatchNorm1dImpl::forward(const Tensor& x) {
  MINIDL_CHECK((x.dim() == 2 || x.dim() == 3) && x.size(1) == options.num_features(),
               "BatchNorm1d: expected input of shape [N, ", options.num_features(),
               " (num_features)] or [N, ", options.num_features(), ", L], got ", x.sizes());
  return normalize(x);
}

}  // namespace minidl::nn
