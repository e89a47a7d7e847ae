#pragma once
// RMSprop, following torch.optim.RMSprop's update exactly (its single-tensor step, written out
// below):
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
#define MINIDL_RMSPROP_OPTIONS(option)                                                          \
  option(double, lr, 1e-2)                                                                      \
  /* The decay rate of the moving average of the squared gradient. */                           \
  option(double, alpha, 0.99)                                                                   \
  option(double, eps, 1e-8)                                                                     \
  option(double, weight_decay, 0)                                                               \
  option(double, momentum, 0)                                                                   \
  /* Normalises by the variance (the squared average minus the squared mean of the gradient) */ \
  /* instead of the squared average. */                                                         \
  option(bool, centered, false)                                                                 \
  /* Ascends the objective instead of descending it. */                                         \
  option(bool, maximize, false)
// clang-format on

// One parameter group's options, as the update reads them.
struct RmspropHyperparameters {
  MINIDL_OPTION_RECORD(MINIDL_RMSPROP_OPTIONS)
};

// The update of one element, RmspropOp, which both backends' multi-tensor apply run (Note
// [Optimizer updates] in optim/multi_tensor_kernels.h), is torch.optim.RMSprop's single-tensor
// step (_single_tensor_rmsprop, the default on the CPU), in its order, with g the gradient, p the
// parameter, s = square_avg, a = grad_avg and b = momentum_buffer:
//
//   g = -g                                      when maximize
//   g = g + weight_decay * p                    when weight_decay != 0
//   s = s * alpha;  s = s + (1 - alpha) * g * g
//   a = lerp(a, g, 1 - alpha)                   centered (torch.lerp's formula)
//   avg = sqrt(s + (-1) * a * a)                centered, else sqrt(s)
//   avg = avg + eps
//   b = b * momentum;  b = b + g / avg;  p = p + (-lr) * b      when momentum > 0
//   p = p + (-lr) * g / avg                                     otherwise
//
// Scalars are computed in double as Python computes them, then converted to the accumulate type
// (float for float32, float16 and bfloat16, double for float64), and every value the
// single-tensor step stores in a tensor of the parameter's dtype is rounded to it, as in
// optim/adam.h. The step count is kept (and counted) but not read, as in PyTorch.

// RMSprop's table lists after the parameter and its gradient (optim/optimizer_math.h).
inline constexpr int kRmspropStepList = kFirstStateList;                // 0-dim float32
inline constexpr int kRmspropSquareAvgList = kFirstStateList + 1;       // s
inline constexpr int kRmspropMomentumBufferList = kFirstStateList + 2;  // b, momentum > 0 only
inline constexpr int kRmspropGradAvgList = kFirstStateList + 3;         // a, centered only

// The element functor (convention in ops/cpu/multi_tensor_apply.h).
template <class T>
class RmspropOp {
 public:
  using Group = RmspropHyperparameters;
  static constexpr const char* kStepName = "RMSprop step";
  using Acc = opmath_t<T>;

  MINIDL_HOST_DEVICE RmspropOp(const Group& group, const TensorListEntry& entry)
      : param_(static_cast<T*>(entry.data[kParamList])),
        grad_(static_cast<const T*>(entry.data[kGradList])),
        square_avg_(static_cast<T*>(entry.data[kRmspropSquareAvgList])),
        momentum_buffer_(static_cast<T*>(entry.data[kRmspropMomentumBufferList])),
        grad_avg_(static_cast<T*>(entry.data[kRmspropGradAvgList])),
        negative_lr_(static_cast<Acc>(-group.lr)),
        alpha_(static_cast<Acc>(group.alpha)),
        one_minus_alpha_(static_cast<Acc>(1.0 - group.alpha)),
        eps_(static_cast<Acc>(group.eps)),
        weight_decay_(static_cast<Acc>(group.weight_decay)),
        momentum_(static_cast<Acc>(group.momentum)),
        grad_sign_(group.maximize ? Acc(-1) : Acc(1)),
        has_weight_decay_(group.weight_decay != 0),
        has_momentum_(group.momentum > 0),
        centered_(group.centered) {}

  MINIDL_HOST_DEVICE void operator()(int64_t i) const {
    dispatch([&](auto momentum, auto centered, auto weight_decay) {
      update<decltype(momentum)::value, decltype(centered)::value, decltype(weight_decay)::value>(
          i);
    });
  }

  // The CPU's loop over [begin, end) (ops/cpu/multi_tensor_apply.h): one branch-free loop per
  // setting of momentum, centered and weight decay, so that the compiler vectorises each.
  void run(int64_t begin, int64_t end) const {
    dispatch([this, begin, end](auto momentum, auto centered, auto weight_decay) {
      // A local copy: stores through the tensor pointers cannot alias it, so its scalars stay in
      // registers.
      const RmspropOp self = *this;
      for (int64_t i = begin; i < end; ++i)
        self.update<decltype(momentum)::value, decltype(centered)::value,
                    decltype(weight_decay)::value>(i);
    });
  }

 private:
  // Calls fn(momentum, centered, weight_decay) with the settings as std::bool_constant.
  template <class Fn>
  MINIDL_HOST_DEVICE void dispatch(const Fn& fn) const {
    const auto with_weight_decay = [&](auto momentum, auto centered) {
      if (has_weight_decay_)
        fn(momentum, centered, std::true_type{});
      else
        fn(momentum, centered, std::false_type{});
    };
    const auto with_centered = [&](auto momentum) {
      if (centered_)
        with_weight_decay(momentum, std::true_type{});
      else
        with_weight_decay(momentum, std::false_type{});
    };
    if (has_momentum_)
      with_centered(std::true_type{});
    else
      with_centered(std::false_type{});
  }

  template <bool kMomentum, bool kCentered, bool kWeightDecay>
  MINIDL_HOST_DEVICE void update(int64_t i) const {
    // -g as g * -1: the same bits, without a branch.
    Acc grad = static_cast<Acc>(grad_[i]) * grad_sign_;
    const Acc param = static_cast<Acc>(param_[i]);
    if constexpr (kWeightDecay) grad = round_through<T>(grad + weight_decay_ * param);
    const Acc decayed_square_avg = round_through<T>(static_cast<Acc>(square_avg_[i]) * alpha_);
    const T square_avg = T(decayed_square_avg + one_minus_alpha_ * grad * grad);
    square_avg_[i] = square_avg;
    Acc variance = static_cast<Acc>(square_avg);
    if constexpr (kCentered) {
      const T grad_avg = T(lerp(static_cast<Acc>(grad_avg_[i]), grad, one_minus_alpha_));
      grad_avg_[i] = grad_avg;
      const Acc mean = static_cast<Acc>(grad_avg);
      variance = round_through<T>(variance + Acc(-1) * mean * mean);
    }
    const Acc avg = round_through<T>(round_through<T>(square_root(variance)) + eps_);
    if constexpr (kMomentum) {
      const Acc decayed_buffer =
          round_through<T>(static_cast<Acc>(momentum_buffer_[i]) * momentum_);
      const T buffer = T(decayed_buffer + Acc(1) * grad / avg);
      momentum_buffer_[i] = buffer;
      param_[i] = T(param + negative_lr_ * static_cast<Acc>(buffer));
    } else {
      param_[i] = T(param + negative_lr_ * grad / avg);
    }
  }

  T* param_;
  const T* grad_;
  T* square_avg_;
  T* momentum_buffer_;  // null unless momentum > 0
  T* grad_avg_;         // null unless centered
  Acc negative_lr_;
  Acc alpha_;
  Acc one_minus_alpha_;
  Acc eps_;
  Acc weight_decay_;
  Acc momentum_;
  Acc grad_sign_;  // -1 when maximize
  bool has_weight_decay_;
  bool has_momentum_;
  bool centered_;
};

MINIDL_OPTIMIZER_UPDATE(RmspropOp)

class RMSpropOptions : public OptionsWithRecord<RMSpropOptions, RmspropHyperparameters> {
 public:
  static constexpr const char* kName = "RMSpropOptions";
  explicit RMSpropOptions(double lr = RmspropHyperparameters().lr) { values_.lr = lr; }

  MINIDL_OPTION_ACCESSORS(MINIDL_RMSPROP_OPTIONS)
};

class RMSprop : public ElementwiseOptimizer<RMSpropOptions, RmspropOp> {
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
  void check_unchanged_since_capture(const OptimizerOptions& at_capture,
                                     const OptimizerOptions& now,
                                     const std::string& where) const override;
};

}  // namespace minidl::optim
