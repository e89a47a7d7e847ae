#pragma once
// RMSprop, following torch.optim.RMSprop's update exactly (its single-tensor step, written out in
// optim/rmsprop_math.h):
//
//   optim::RMSprop optimizer(model->parameters(), optim::RMSpropOptions(1e-2).momentum(0.9));
//
// The options and their defaults are PyTorch's: lr 1e-2, alpha 0.99, eps 1e-8, weight_decay 0,
// momentum 0, centered and maximize off. state_dict() holds, per parameter, PyTorch's "step" (a
// 0-dim float32 tensor on the parameter's device, counted but not read), "square_avg" and, with
// momentum > 0, "momentum_buffer", and when centered, "grad_avg", all made on its first step
// (zeros in the parameter's layout); param_groups hold "lr", "alpha", "eps", "weight_decay",
// "momentum", "centered" and "maximize".
//
// The step is MultiTensorOptimizer's (optim/multi_tensor_optimizer.h): on CUDA one launch that
// counts the steps and one fused update launch per (device, dtype), both skipped on the device
// under GradScaler's found_inf flag; a step can be captured into a CUDA graph after one eager
// step.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "minidl/core/arg.h"
#include "minidl/optim/multi_tensor_optimizer.h"
#include "minidl/optim/optimizer.h"

namespace minidl::optim {

class RMSpropOptions : public OptimizerOptions {
 public:
  explicit RMSpropOptions(double lr = 1e-2) : lr_(lr) {}

  std::unique_ptr<OptimizerOptions> clone() const override;
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  // {"lr", "alpha", "eps", "weight_decay", "momentum", "centered", "maximize"}
  ScalarMap to_scalars() const override;
  void load_scalars(const ScalarMap& scalars, const std::string& what) override;

  MINIDL_ARG(double, lr);
  // The decay rate of the moving average of the squared gradient.
  MINIDL_ARG(double, alpha) = 0.99;
  MINIDL_ARG(double, eps) = 1e-8;
  MINIDL_ARG(double, weight_decay) = 0;
  MINIDL_ARG(double, momentum) = 0;
  // Normalises by the variance (the squared average minus the squared mean of the gradient)
  // instead of the squared average.
  MINIDL_ARG(bool, centered) = false;
  // Ascends the objective instead of descending it.
  MINIDL_ARG(bool, maximize) = false;
};

class RMSprop : public MultiTensorOptimizer {
 public:
  RMSprop(std::vector<Tensor> params, const RMSpropOptions& defaults = RMSpropOptions());
  // Groups without options of their own use `defaults`.
  RMSprop(std::vector<OptimizerParamGroup> groups,
          const RMSpropOptions& defaults = RMSpropOptions());

 private:
  const char* name() const override { return "RMSprop"; }
  void check_options(const OptimizerOptions& options, const std::string& where) const override;
  const std::vector<StateList>& state_lists() const override;
  uint32_t state_mask(const OptimizerOptions& options) const override;
  void append_group_record(const OptimizerOptions& options,
                           std::vector<std::byte>& records) const override;
  void update(Device device, const MultiTensorArgs& args) const override;
  void check_unchanged_since_capture(const OptimizerOptions& at_capture,
                                     const OptimizerOptions& now,
                                     const std::string& where) const override;
};

}  // namespace minidl::optim
