#pragma once
// The update of one element by Adam and AdamW, written once as the element functor AdamOp that
// both backends' multi-tensor apply runs (optim/cpu/adam_kernel.cpp, optim/cuda/adam_kernel.cu).
// It is torch.optim.Adam's single-tensor step (_single_tensor_adam, the default on the CPU), in
// its order, with g the gradient, p the parameter, m = exp_avg, v = exp_avg_sq, t the step count
// (already incremented for this step):
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
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "minidl/core/half.h"
#include "minidl/core/macros.h"
#include "minidl/ops/multi_tensor_table.h"
#include "minidl/optim/optimizer_math.h"

namespace minidl::optim {

// Adam's table lists after the parameter and its gradient (optim/optimizer_math.h).
inline constexpr int kAdamStepList = kFirstStateList;             // 0-dim float32
inline constexpr int kAdamExpAvgList = kFirstStateList + 1;       // m
inline constexpr int kAdamExpAvgSqList = kFirstStateList + 2;     // v
inline constexpr int kAdamMaxExpAvgSqList = kFirstStateList + 3;  // v_max, amsgrad only

// One parameter group's hyper-parameters: the groups section of Adam's table.
struct AdamGroupParameters {
  double lr = 0;
  double beta1 = 0;
  double beta2 = 0;
  double eps = 0;
  double weight_decay = 0;
  int32_t amsgrad = 0;                 // 0 or 1
  int32_t maximize = 0;                // 0 or 1
  int32_t decoupled_weight_decay = 0;  // 1 for AdamW
  int32_t unused_padding = 0;
};

// The element functor (convention in ops/cpu/multi_tensor_apply.h).
template <class T>
class AdamOp {
 public:
  using Group = AdamGroupParameters;
  using Acc = opmath_t<T>;

  MINIDL_HOST_DEVICE AdamOp(const Group& group, const TensorListEntry& entry)
      : param_(static_cast<T*>(entry.data[kParamList])),
        grad_(static_cast<const T*>(entry.data[kGradList])),
        exp_avg_(static_cast<T*>(entry.data[kAdamExpAvgList])),
        exp_avg_sq_(static_cast<T*>(entry.data[kAdamExpAvgSqList])),
        max_exp_avg_sq_(static_cast<T*>(entry.data[kAdamMaxExpAvgSqList])),
        beta2_(static_cast<Acc>(group.beta2)),
        one_minus_beta1_(static_cast<Acc>(1.0 - group.beta1)),
        one_minus_beta2_(static_cast<Acc>(1.0 - group.beta2)),
        eps_(static_cast<Acc>(group.eps)),
        weight_decay_(static_cast<Acc>(group.weight_decay)),
        decay_factor_(static_cast<Acc>(1.0 - group.lr * group.weight_decay)),
        grad_sign_(group.maximize != 0 ? Acc(-1) : Acc(1)),
        l2_weight_decay_(group.weight_decay != 0 && group.decoupled_weight_decay == 0),
        decoupled_weight_decay_(group.weight_decay != 0 && group.decoupled_weight_decay != 0),
        amsgrad_(group.amsgrad != 0) {
    const double step = static_cast<double>(*static_cast<const float*>(entry.data[kAdamStepList]));
    const double bias_correction1 = 1.0 - ::pow(group.beta1, step);
    const double bias_correction2 = 1.0 - ::pow(group.beta2, step);
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

}  // namespace minidl::optim
