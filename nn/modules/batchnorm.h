#pragma once
// nn::BatchNorm2d and nn::BatchNorm1d: per-channel normalisation, as torch::nn::BatchNorm2d
// over [N, C, H, W] and torch::nn::BatchNorm1d over [N, C] or [N, C, L].
// In training mode each batch is normalised with its own mean and biased variance, and the
// running statistics are updated; in evaluation mode (module.eval()) the running statistics
// normalise instead. Registers, as PyTorch (so state_dict keys match):
//   parameters  weight [C] (init 1), bias [C] (init 0)            when affine
//   buffers     running_mean [C] (0), running_var [C] (1),
//               num_batches_tracked [] int64 (0)                   when track_running_stats
#include <cstdint>
#include <iosfwd>
#include <string>

#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"
#include "minidl/nn/options/batchnorm.h"

namespace minidl::nn {

// What both layers share, as PyTorch's _BatchNorm: the parameters, buffers and the step; each
// layer checks its input's rank.
class BatchNormImplBase : public Module {
 public:
  // Running statistics back to mean 0, variance 1, and no batches seen.
  void reset_running_stats();
  // reset_running_stats(), and weight 1 and bias 0.
  void reset_parameters();
  void pretty_print(std::ostream& out) const override;

  BatchNorm2dOptions options;
  Tensor weight;               // [C], undefined unless affine
  Tensor bias;                 // [C], undefined unless affine
  Tensor running_mean;         // [C], undefined unless track_running_stats
  Tensor running_var;          // [C], undefined unless track_running_stats
  Tensor num_batches_tracked;  // [] int64, undefined unless track_running_stats

 protected:
  // `name` is the layer's ("BatchNorm2d"), for its errors and printed form.
  BatchNormImplBase(std::string name, const BatchNorm2dOptions& options);
  enum class Activation { None, Relu };
  // The step on an input whose shape the layer has checked; with Relu, relu(step + residual)
  // as one node (batch_norm_relu, ops/norm.h).
  Tensor normalize(const Tensor& x, Activation activation = Activation::None,
                   const Tensor& residual = Tensor());
};

class BatchNorm2dImpl : public BatchNormImplBase {
 public:
  explicit BatchNorm2dImpl(int64_t num_features)
      : BatchNorm2dImpl(BatchNorm2dOptions(num_features)) {}
  explicit BatchNorm2dImpl(const BatchNorm2dOptions& options)
      : BatchNormImplBase("BatchNorm2d", options) {}

  // x [N, num_features, H, W] -> the same shape.
  Tensor forward(const Tensor& x);
  // relu(forward(x) + residual) (residual undefined: relu(forward(x))) as one op and one
  // autograd node, with the same bits (batch_norm_relu, ops/norm.h): what a ResNet block does
  // after its convolutions, without the intermediate tensors.
  Tensor forward_relu(const Tensor& x, const Tensor& residual = Tensor());
};

MINIDL_MODULE(BatchNorm2d);

class BatchNorm1dImpl : public BatchNormImplBase {
 public:
  explicit BatchNorm1dImpl(int64_t num_features)
      : BatchNorm1dImpl(BatchNorm1dOptions(num_features)) {}
  explicit BatchNorm1dImpl(const BatchNorm1dOptions& options)
      : BatchNormImplBase("BatchNorm1d", options) {}

  // x [N, num_features] or [N, num_features, L] -> the same shape.
  Tensor forward(const Tensor& x);
};

MINIDL_MODULE(BatchNorm1d);

}  // namespace minidl::nn
