#pragma once
// Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay,
// following torch.optim.SGD's update rule exactly (written out in optim/sgd_math.h):
//
//   optim::SGD optimizer(model->parameters(),
//                        optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(5e-4));
//   ...
//   optimizer.zero_grad();
//   loss.backward();
//   optimizer.step();
//
// The momentum buffer of a parameter is made on its first step as a copy of its (decayed)
// gradient, without dampening, and is saved in state_dict() as "momentum_buffer".
//
// The step is MultiTensorOptimizer's (optim/multi_tensor_optimizer.h): CPU parameters are
// updated tensor by tensor, each loop split across the CPU threads; CUDA parameters by ONE fused
// kernel launch per (device, dtype) (one in all for an fp32 model; Note [Multi-tensor apply] in
// ops/multi_tensor_table.h). Parameters must be dense (contiguous, channels-last or any other
// permutation without gaps); a gradient laid out differently from its parameter is copied into
// the parameter's layout first. It runs under NoGradGuard and bumps the version of every
// parameter and buffer it writes.
//
// A step captured into a CUDA graph (core/cuda/graph.h) launches the same kernel on a table of
// the graph's own, whose hyper-parameters are refreshed from the param groups' options before
// every replay, so a scheduler's lr applies to replays as to eager steps (Note [Multi-tensor
// steps under CUDA graph capture] in optim/multi_tensor_optimizer.cpp). The momentum buffers
// must exist before the capture (one eager step), and the param groups and whether each has
// momentum must not change after it.
//
// step_unless_found_inf (GradScaler): a momentum buffer created by a step that carries a CUDA
// found_inf flag starts at zero instead of uninitialised, so a skipped first step leaves it
// harmless; the next step then treats it as an existing buffer (b = momentum * 0 +
// (1 - dampening) * g), which differs from a first step only when dampening != 0.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "minidl/core/arg.h"
#include "minidl/optim/multi_tensor_optimizer.h"
#include "minidl/optim/optimizer.h"

namespace minidl::optim {

class SGDOptions : public OptimizerOptions {
 public:
  explicit SGDOptions(double lr) : lr_(lr) {}

  std::unique_ptr<OptimizerOptions> clone() const override;
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  // {"lr", "momentum", "dampening", "weight_decay", "nesterov"}
  ScalarMap to_scalars() const override;
  void load_scalars(const ScalarMap& scalars, const std::string& what) override;

  MINIDL_ARG(double, lr);
  MINIDL_ARG(double, momentum) = 0;
  MINIDL_ARG(double, dampening) = 0;
  MINIDL_ARG(double, weight_decay) = 0;
  // Nesterov momentum needs momentum > 0 and dampening == 0 (checked when used).
  MINIDL_ARG(bool, nesterov) = false;
};

class SGD : public MultiTensorOptimizer {
 public:
  SGD(std::vector<Tensor> params, const SGDOptions& defaults);
  // Groups without options of their own use `defaults`.
  SGD(std::vector<OptimizerParamGroup> groups, const SGDOptions& defaults);

 private:
  const char* name() const override { return "SGD"; }
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
