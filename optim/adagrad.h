#pragma once
// Adagrad, following torch.optim.Adagrad's update exactly (its single-tensor step, written out
// below):
//
//   optim::Adagrad optimizer(model->parameters(), optim::AdagradOptions(1e-2).lr_decay(1e-4));
//
// The options and their defaults are PyTorch's: lr 1e-2, lr_decay 0, weight_decay 0,
// initial_accumulator_value 0, eps 1e-10, maximize off. state_dict() holds, per parameter,
// PyTorch's "step" (a 0-dim float32 tensor on the parameter's device) and "sum" (the running sum
// of squared gradients, in the parameter's layout); param_groups hold "lr", "lr_decay",
// "weight_decay", "initial_accumulator_value", "eps" and "maximize". As in PyTorch, every sum
// starts at the initial_accumulator_value of the optimizer's defaults, whatever a group's own
// says. PyTorch makes the state in the constructor, minidl on a parameter's first step (as for
// the other optimizers): a state_dict() taken before any step has no state here; the steps are
// the same.
//
// The step is MultiTensorOptimizer's (optim/multi_tensor_optimizer.h): on CUDA one launch that
// counts the steps and one fused update launch per (device, dtype), both skipped on the device
// under GradScaler's found_inf flag; a step can be captured into a CUDA graph after one eager
// step.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "minidl/core/half.h"
#include "minidl/core/macros.h"
#include "minidl/optim/multi_tensor_optimizer.h"
#include "minidl/optim/optimizer_math.h"
#include "minidl/optim/option_list.h"

namespace minidl::optim {

// The options, PyTorch's names and defaults (optim/option_list.h).
// clang-format off
#define MINIDL_ADAGRAD_OPTIONS(option)                                                         \
  option(double, lr, 1e-2)                                                                     \
  /* The learning rate at step t is lr / (1 + (t - 1) * lr_decay). */                          \
  option(double, lr_decay, 0)                                                                  \
  option(double, weight_decay, 0)                                                              \
  /* Where the sums of squared gradients start (the defaults' value, for every group, as in */ \
  /* PyTorch). */                                                                              \
  option(double, initial_accumulator_value, 0)                                                 \
  option(double, eps, 1e-10)                                                                   \
  /* Ascends the objective instead of descending it. */                                        \
  option(bool, maximize, false)
// clang-format on

// One parameter group's options, as the update reads them.
struct AdagradHyperparameters {
  MINIDL_OPTION_RECORD(MINIDL_ADAGRAD_OPTIONS)
};

// The update of one element, AdagradOp, which both backends' multi-tensor apply run (Note
// [Optimizer updates] in optim/multi_tensor_kernels.h), is torch.optim.Adagrad's single-tensor
// step (_single_tensor_adagrad), in its order, with g the gradient, p the parameter, s = sum and
// t the step count (already incremented for this step):
//
//   g = -g                                      when maximize
//   g = g + weight_decay * p                    when weight_decay != 0
//   clr = lr / (1 + (t - 1) * lr_decay)
//   s = s + 1 * g * g
//   std = sqrt(s) + eps
//   p = p + (-clr) * g / std
//
// clr is computed in double, as Python computes it, then converted to the accumulate type (float
// for float32, float16 and bfloat16, double for float64); every value the single-tensor step
// stores in a tensor of the parameter's dtype is rounded to it, as in optim/adam.h.

// Adagrad's table lists after the parameter and its gradient (optim/optimizer_math.h).
inline constexpr int kAdagradStepList = kFirstStateList;     // 0-dim float32
inline constexpr int kAdagradSumList = kFirstStateList + 1;  // s

// The element functor (convention in ops/cpu/multi_tensor_apply.h).
template <class T>
class AdagradOp {
 public:
  using Group = AdagradHyperparameters;
  using Acc = opmath_t<T>;
  static constexpr const char* kStepName = "Adagrad step";

  MINIDL_HOST_DEVICE AdagradOp(const Group& group, const TensorListEntry& entry)
      : param_(static_cast<T*>(entry.data[kParamList])),
        grad_(static_cast<const T*>(entry.data[kGradList])),
        sum_(static_cast<T*>(entry.data[kAdagradSumList])),
        eps_(static_cast<Acc>(group.eps)),
        weight_decay_(static_cast<Acc>(group.weight_decay)),
        grad_sign_(group.maximize ? Acc(-1) : Acc(1)),
        has_weight_decay_(group.weight_decay != 0) {
    // PyTorch's step.item(): the float32 count as a Python float.
    const double step =
        static_cast<double>(*static_cast<const float*>(entry.data[kAdagradStepList]));
    negative_clr_ = static_cast<Acc>(-(group.lr / (1.0 + (step - 1.0) * group.lr_decay)));
  }

  MINIDL_HOST_DEVICE void operator()(int64_t i) const {
    if (has_weight_decay_)
      update<true>(i);
    else
      update<false>(i);
  }

  // The CPU's loop over [begin, end) (ops/cpu/multi_tensor_apply.h): one branch-free loop per
  // setting of the weight decay, so that the compiler vectorises each.
  void run(int64_t begin, int64_t end) const {
    // A local copy: stores through the tensor pointers cannot alias it, so its scalars stay in
    // registers.
    const AdagradOp self = *this;
    if (has_weight_decay_)
      for (int64_t i = begin; i < end; ++i) self.update<true>(i);
    else
      for (int64_t i = begin; i < end; ++i) self.update<false>(i);
  }

 private:
  template <bool kWeightDecay>
  MINIDL_HOST_DEVICE void update(int64_t i) const {
    // -g as g * -1: the same bits, without a branch.
    Acc grad = static_cast<Acc>(grad_[i]) * grad_sign_;
    const Acc param = static_cast<Acc>(param_[i]);
    if constexpr (kWeightDecay) grad = round_through<T>(grad + weight_decay_ * param);
    const T sum = T(static_cast<Acc>(sum_[i]) + Acc(1) * grad * grad);
    sum_[i] = sum;
    const Acc std = round_through<T>(round_through<T>(square_root(static_cast<Acc>(sum))) + eps_);
    param_[i] = T(param + negative_clr_ * grad / std);
  }

  T* param_;
  const T* grad_;
  T* sum_;
  Acc eps_;
  Acc weight_decay_;
  Acc grad_sign_;  // -1 when maximize
  Acc negative_clr_;
  bool has_weight_decay_;
};

MINIDL_OPTIMIZER_UPDATE(AdagradOp)

class AdagradOptions : public OptionsWithRecord<AdagradOptions, AdagradHyperparameters> {
 public:
  static constexpr const char* kName = "AdagradOptions";
  explicit AdagradOptions(double lr = AdagradHyperparameters().lr) { values_.lr = lr; }

  MINIDL_OPTION_ACCESSORS(MINIDL_ADAGRAD_OPTIONS)
};

class Adagrad : public ElementwiseOptimizer<AdagradOptions, AdagradOp> {
 public:
  Adagrad(std::vector<Tensor> params, const AdagradOptions& defaults = AdagradOptions());
  // Groups without options of their own use `defaults`.
  Adagrad(std::vector<OptimizerParamGroup> groups,
          const AdagradOptions& defaults = AdagradOptions());

 private:
  const char* name() const override { return "Adagrad"; }
  void check_options(const OptimizerOptions& options, const std::string& where) const override;
  const std::vector<StateList>& state_lists() const override;
  uint32_t state_mask(const OptimizerOptions& options) const override;
  double state_fill_value(const OptimizerOptions& options) const override;
  void check_unchanged_since_capture(const OptimizerOptions& at_capture,
                                     const OptimizerOptions& now,
                                     const std::string& where) const override;
};

}  // namespace minidl::optim
