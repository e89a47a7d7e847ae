#pragma once
// nn::BatchNorm2d: per-channel normalisation of [N, C, H, W], as torch::nn::BatchNorm2d.
// In training mode each batch is normalised with its own mean and biased variance, and the
// running statistics are updated; in evaluation mode (module.eval()) the running statistics
// normalise instead. Registers, as PyTorch (so state_dict keys match):
//   parameters  weight [C] (init 1), bias [C] (init 0)            when affine
//   buffers     running_mean [C] (0), running_var [C] (1),
//               num_batches_tracked [] int64 (0)                   when track_running_stats
#include <cstdint>
#include <iosfwd>

#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"
#include "minidl/nn/options/batchnorm.h"

namespace minidl::nn {

class BatchNorm2dImpl : public Module {
 public:
  explicit BatchNorm2dImpl(int64_t num_features)
      : BatchNorm2dImpl(BatchNorm2dOptions(num_features)) {}
  explicit BatchNorm2dImpl(const BatchNorm2dOptions& options);

  // x [N, num_features, H, W] -> the same shape.
  Tensor forward(const Tensor& x);
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
};

MINIDL_MODULE(BatchNorm2d);

}  // namespace minidl::nn
