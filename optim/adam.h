#pragma once
// Adam and AdamW, following torch.optim.Adam's and torch.optim.AdamW's update exactly (their
// single-tensor step, written out in optim/adam_math.h):
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
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "minidl/optim/multi_tensor_optimizer.h"
#include "minidl/optim/optimizer.h"

namespace minidl::optim {

// The options of Adam and AdamW, which differ only in weight_decay's default; Self is the
// concrete class, which the chained setters return. (So they are written by hand: MINIDL_ARG's
// setters would return this base class, and AdamW(params, AdamWOptions().lr(...)) would not
// compile.)
template <class Self>
class AdamOptionsBase : public OptimizerOptions {
 public:
  Self& lr(double value) {
    lr_ = value;
    return self();
  }
  // The decay rates of the moving averages of the gradient and of its square.
  Self& betas(std::pair<double, double> value) {
    betas_ = value;
    return self();
  }
  Self& eps(double value) {
    eps_ = value;
    return self();
  }
  Self& weight_decay(double value) {
    weight_decay_ = value;
    return self();
  }
  // Divides by the largest second moment seen so far instead of the current one.
  Self& amsgrad(bool value) {
    amsgrad_ = value;
    return self();
  }
  // Ascends the objective instead of descending it.
  Self& maximize(bool value) {
    maximize_ = value;
    return self();
  }

  double lr() const { return lr_; }
  std::pair<double, double> betas() const { return betas_; }
  double eps() const { return eps_; }
  double weight_decay() const { return weight_decay_; }
  bool amsgrad() const { return amsgrad_; }
  bool maximize() const { return maximize_; }

  std::unique_ptr<OptimizerOptions> clone() const override;
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  // {"lr", "betas.0", "betas.1", "eps", "weight_decay", "amsgrad", "maximize"}
  ScalarMap to_scalars() const override;
  void load_scalars(const ScalarMap& scalars, const std::string& what) override;

 protected:
  AdamOptionsBase(double lr, double weight_decay) : lr_(lr), weight_decay_(weight_decay) {}

 private:
  Self& self() { return static_cast<Self&>(*this); }

  double lr_;
  std::pair<double, double> betas_{0.9, 0.999};
  double eps_ = 1e-8;
  double weight_decay_;
  bool amsgrad_ = false;
  bool maximize_ = false;
};

class AdamOptions;
class AdamWOptions;
// Defined in adam.cpp.
extern template class AdamOptionsBase<AdamOptions>;
extern template class AdamOptionsBase<AdamWOptions>;

class AdamOptions : public AdamOptionsBase<AdamOptions> {
 public:
  explicit AdamOptions(double lr = 1e-3) : AdamOptionsBase(lr, 0.0) {}
};

class AdamWOptions : public AdamOptionsBase<AdamWOptions> {
 public:
  explicit AdamWOptions(double lr = 1e-3) : AdamOptionsBase(lr, 1e-2) {}
};

// Adam (Options = AdamOptions) and AdamW (AdamWOptions): one implementation, in adam.cpp.
template <class Options>
class AdamFamily : public MultiTensorOptimizer {
 public:
  AdamFamily(std::vector<Tensor> params, const Options& defaults = Options());
  // Groups without options of their own use `defaults`.
  AdamFamily(std::vector<OptimizerParamGroup> groups, const Options& defaults = Options());

 private:
  const char* name() const override;
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
