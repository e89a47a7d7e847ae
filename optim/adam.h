#pragma once
// Adam and AdamW, following torch.optim.Adam's and torch.optim.AdamW's update exactly (their
// single-tensor step, written out below):
//
//   optim::AdamW optimizer(model->parameters(), optim::AdamWOptions(1e-3).weight_decay(0.05));
//   ...
//   optimizer.zero_grad();
//   loss.backward();
//   optimizer.step();
//
// Adam adds weight_decay * p to the gradient (L2 regularisation); AdamW decays the parameter
// itself, p *= 1 - lr * weight_decay, before the update (decoupled weight decay). The options
// and their defaults are PyTorch's: lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight_decay 0
// (AdamW 1e-2), amsgrad and maximize off. state_dict() holds, per parameter, PyTorch's "step" (a
// 0-dim float32 tensor on the parameter's device), "exp_avg", "exp_avg_sq" and, with amsgrad,
// "max_exp_avg_sq", all made on its first step (the moments as zeros in the parameter's layout);
// param_groups hold "lr", "betas.0", "betas.1", "eps", "weight_decay", "amsgrad" and "maximize".
//
// The step is MultiTensorOptimizer's (optim/multi_tensor_optimizer.h): on CUDA one launch that
// counts the steps and one fused update launch per (device, dtype), both skipped on the device
// under GradScaler's found_inf flag; a step can be captured into a CUDA graph after one eager
// step. float16 and bfloat16 parameters compute in float and store their state in their own
// dtype, as PyTorch's single-tensor step does.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "minidl/core/half.h"
#include "minidl/core/macros.h"
#include "minidl/optim/multi_tensor_optimizer.h"
#include "minidl/optim/optimizer_math.h"
#include "minidl/optim/option_list.h"

namespace minidl::optim {

// The options of Adam and AdamW, PyTorch's names and defaults (optim/option_list.h); AdamW's
// weight_decay defaults to 1e-2.
// clang-format off
#define MINIDL_ADAM_OPTIONS(option)                                                  \
  option(double, lr, 1e-3)                                                           \
  /* The decay rates of the moving averages of the gradient and of its square. */    \
  option(Betas, betas, Betas(0.9, 0.999))                                            \
  option(double, eps, 1e-8)                                                          \
  option(double, weight_decay, 0)                                                    \
  /* Divides by the largest second moment seen so far instead of the current one. */ \
  option(bool, amsgrad, false)                                                       \
  /* Ascends the objective instead of descending it. */                              \
  option(bool, maximize, false)
// clang-format on

// One parameter group's options, as the update reads them.
struct AdamHyperparameters {
  MINIDL_OPTION_RECORD(MINIDL_ADAM_OPTIONS)
  // Not an option: what makes AdamW (set by AdamWOptions).
  bool decoupled_weight_decay = false;
};

// The update of one element by Adam and AdamW, AdamOp, which both backends' multi-tensor apply run
// (Note [Optimizer updates] in optim/multi_tensor_kernels.h), is torch.optim.Adam's single-tensor
// step (_single_tensor_adam, the default on the CPU), in its order, with g the gradient, p the
// parameter, m = exp_avg, v = exp_avg_sq, t the step count (already incremented for this step):
//
//   g = -g                                          when maximize
//   p = p * (1 - lr * weight_decay)                 AdamW, when weight_decay != 0
//   g = g + weight_decay * p                        Adam, when weight_decay != 0
//   m = lerp(m, g, 1 - beta1)                       torch.lerp's formula (optim/optimizer_math.h)
//   v = v * beta2;  v = v + (1 - beta2) * g * g
//   v_max = maximum(v_max, v)                       amsgrad; the denominator then uses v_max
//   denom = sqrt(v) / sqrt(1 - beta2^t) + eps
//   p = p + (-lr / (1 - beta1^t)) * m / denom
//
// The bias corrections, the step size and the scalars of the formula (1 - beta1, ...) are
// computed in double, as Python computes them, then converted to the accumulate type: float for
// float32, float16 and bfloat16 parameters (PyTorch's opmath), double for float64. Every value
// the single-tensor step stores in a tensor of the parameter's dtype (the decayed gradient, the
// in-place results, the temporaries of denom) is rounded to that dtype here too, which matters
// only for 16-bit parameters. On CUDA each thread computes the bias corrections from the device
// step count when it starts a chunk, as PyTorch's fused Adam does.
// Adam's table lists after the parameter and its gradient (optim/optimizer_math.h).
inline constexpr int kAdamStepList = kFirstStateList;             // 0-dim float32
inline constexpr int kAdamExpAvgList = kFirstStateList + 1;       // m
inline constexpr int kAdamExpAvgSqList = kFirstStateList + 2;     // v
inline constexpr int kAdamMaxExpAvgSqList = kFirstStateList + 3;  // v_max, amsgrad only

// The element functor (convention in ops/cpu/multi_tensor_apply.h).
template <class T>
class AdamOp {
 public:
  using Group = AdamHyperparameters;
  static constexpr const char* kStepName = "Adam step";
  using Acc = opmath_t<T>;

  MINIDL_HOST_DEVICE AdamOp(const Group& group, const TensorListEntry& entry)
      : param_(static_cast<T*>(entry.data[kParamList])),
        grad_(static_cast<const T*>(entry.data[kGradList])),
        exp_avg_(static_cast<T*>(entry.data[kAdamExpAvgList])),
        exp_avg_sq_(static_cast<T*>(entry.data[kAdamExpAvgSqList])),
        max_exp_avg_sq_(static_cast<T*>(entry.data[kAdamMaxExpAvgSqList])),
        beta2_(static_cast<Acc>(group.betas.second)),
        one_minus_beta1_(static_cast<Acc>(1.0 - group.betas.first)),
        one_minus_beta2_(static_cast<Acc>(1.0 - group.betas.second)),
        eps_(static_cast<Acc>(group.eps)),
        weight_decay_(static_cast<Acc>(group.weight_decay)),
        decay_factor_(static_cast<Acc>(1.0 - group.lr * group.weight_decay)),
        grad_sign_(group.maximize ? Acc(-1) : Acc(1)),
        l2_weight_decay_(group.weight_decay != 0 && !group.decoupled_weight_decay),
        decoupled_weight_decay_(group.weight_decay != 0 && group.decoupled_weight_decay),
        amsgrad_(group.amsgrad) {
    const double step = static_cast<double>(*static_cast<const float*>(entry.data[kAdamStepList]));
    const double bias_correction1 = 1.0 - ::pow(group.betas.first, step);
    const double bias_correction2 = 1.0 - ::pow(group.betas.second, step);
    negative_step_size_ = static_cast<Acc>(-(group.lr / bias_correction1));
    bias_correction2_sqrt_ = static_cast<Acc>(::pow(bias_correction2, 0.5));  // Python's ** 0.5
  }

  MINIDL_HOST_DEVICE void operator()(int64_t i) const {
    dispatch([&](auto amsgrad, auto l2, auto decoupled) {
      update<decltype(amsgrad)::value, decltype(l2)::value, decltype(decoupled)::value>(i);
    });
  }

  // The CPU's loop over [begin, end) (ops/cpu/multi_tensor_apply.h): one branch-free loop per
  // setting of amsgrad and of the weight decay, so that the compiler vectorises each.
  void run(int64_t begin, int64_t end) const {
    dispatch([this, begin, end](auto amsgrad, auto l2, auto decoupled) {
      // A local copy: stores through the tensor pointers cannot alias it, so its scalars stay in
      // registers.
      const AdamOp self = *this;
      for (int64_t i = begin; i < end; ++i)
        self.update<decltype(amsgrad)::value, decltype(l2)::value, decltype(decoupled)::value>(i);
    });
  }

 private:
  // Calls fn(amsgrad, l2, decoupled) with the settings as std::bool_constant.
  template <class Fn>
  MINIDL_HOST_DEVICE void dispatch(const Fn& fn) const {
    using Yes = std::true_type;
    using No = std::false_type;
    if (amsgrad_) {
      if (l2_weight_decay_)
        fn(Yes{}, Yes{}, No{});
      else if (decoupled_weight_decay_)
        fn(Yes{}, No{}, Yes{});
      else
        fn(Yes{}, No{}, No{});
    } else {
      if (l2_weight_decay_)
        fn(No{}, Yes{}, No{});
      else if (decoupled_weight_decay_)
        fn(No{}, No{}, Yes{});
      else
        fn(No{}, No{}, No{});
    }
  }

  template <bool kAmsgrad, bool kL2WeightDecay, bool kDecoupledWeightDecay>
  MINIDL_HOST_DEVICE void update(int64_t i) const {
    // -g as g * -1: the same bits, without a branch.
    Acc grad = static_cast<Acc>(grad_[i]) * grad_sign_;
    Acc param = static_cast<Acc>(param_[i]);
    if constexpr (kDecoupledWeightDecay) param = round_through<T>(param * decay_factor_);
    if constexpr (kL2WeightDecay) grad = round_through<T>(grad + weight_decay_ * param);
    const T exp_avg = T(lerp(static_cast<Acc>(exp_avg_[i]), grad, one_minus_beta1_));
    exp_avg_[i] = exp_avg;
    const Acc decayed_sq = round_through<T>(static_cast<Acc>(exp_avg_sq_[i]) * beta2_);
    const T exp_avg_sq = T(decayed_sq + one_minus_beta2_ * grad * grad);
    exp_avg_sq_[i] = exp_avg_sq;
    Acc second_moment = static_cast<Acc>(exp_avg_sq);
    if constexpr (kAmsgrad) {
      const T max_exp_avg_sq = T(maximum(static_cast<Acc>(max_exp_avg_sq_[i]), second_moment));
      max_exp_avg_sq_[i] = max_exp_avg_sq;
      second_moment = static_cast<Acc>(max_exp_avg_sq);
    }
    const Acc root = round_through<T>(square_root(second_moment));
    const Acc denom = round_through<T>(round_through<T>(root / bias_correction2_sqrt_) + eps_);
    param_[i] = T(param + negative_step_size_ * static_cast<Acc>(exp_avg) / denom);
  }

  T* param_;
  const T* grad_;
  T* exp_avg_;
  T* exp_avg_sq_;
  T* max_exp_avg_sq_;  // null unless amsgrad
  Acc beta2_;
  Acc one_minus_beta1_;
  Acc one_minus_beta2_;
  Acc eps_;
  Acc weight_decay_;
  Acc decay_factor_;  // 1 - lr * weight_decay
  Acc negative_step_size_;
  Acc bias_correction2_sqrt_;
  Acc grad_sign_;                // -1 when maximize
  bool l2_weight_decay_;         // Adam's: g += weight_decay * p
  bool decoupled_weight_decay_;  // AdamW's: p *= 1 - lr * weight_decay
  bool amsgrad_;
};

MINIDL_OPTIMIZER_UPDATE(AdamOp)

class AdamOptions : public OptionsWithRecord<AdamOptions, AdamHyperparameters> {
 public:
  static constexpr const char* kName = "AdamOptions";
  explicit AdamOptions(double lr = AdamHyperparameters().lr) { values_.lr = lr; }

  MINIDL_OPTION_ACCESSORS(MINIDL_ADAM_OPTIONS)
};

class AdamWOptions : public OptionsWithRecord<AdamWOptions, AdamHyperparameters> {
 public:
  static constexpr const char* kName = "AdamWOptions";
  explicit AdamWOptions(double lr = AdamHyperparameters().lr) {
    values_.lr = lr;
    values_.weight_decay = 1e-2;
    values_.decoupled_weight_decay = true;
  }

  MINIDL_OPTION_ACCESSORS(MINIDL_ADAM_OPTIONS)
};

// Adam (Options = AdamOptions) and AdamW (AdamWOptions): one implementation, in adam.cpp.
template <class Options>
class AdamFamily : public ElementwiseOptimizer<Options, AdamOp> {
 public:
  AdamFamily(std::vector<Tensor> params, const Options& defaults = Options());
  // Groups without options of their own use `defaults`.
  AdamFamily(std::vector<OptimizerParamGroup> groups, const Options& defaults = Options());

 private:
  using ElementwiseOptimizer<Options, AdamOp>::options_of;
  const char* name() const override;
  void check_options(const OptimizerOptions& options, const std::string& where) const override;
  const std::vector<StateList>& state_lists() const override;
  uint32_t state_mask(const OptimizerOptions& options) const override;
  void check_unchanged_since_capture(const OptimizerOptions& at_capture,
                                     const OptimizerOptions& now,
                                     const std::string& where) const override;
};

extern template class AdamFamily<AdamOptions>;
extern template class AdamFamily<AdamWOptions>;

// Adam with L2 weight decay (torch.optim.Adam).
class Adam : public AdamFamily<AdamOptions> {
 public:
  using AdamFamily::AdamFamily;
};

// Adam with decoupled weight decay (torch.optim.AdamW).
class AdamW : public AdamFamily<AdamWOptions> {
 public:
  using AdamFamily::AdamFamily;
};

}  // namespace minidl::optim
