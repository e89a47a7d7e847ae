#pragma once
// Learning-rate schedulers, as torch.optim.lr_scheduler. Each computes every param group's lr
// from a closed form of the epoch count and writes it into the optimizer:
//
//   optim::SGD optimizer(model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
//   optim::CosineAnnealingLR scheduler(optimizer, /*T_max=*/epochs);
//   for (int64_t epoch = 0; epoch < epochs; ++epoch) {
//     train_one_epoch(...);   // optimizer.step() inside
//     scheduler.step();       // after the optimizer, as in PyTorch
//   }
//
// As in PyTorch, constructing a scheduler performs the initial step: last_epoch() becomes 0
// and each group's lr becomes lr_at(0). "Epoch" is whatever step() counts: epochs for
// StepLR, batches for OneCycleLR. base_lr is each group's lr when the scheduler is made.
//
// Closed forms (e = last_epoch, b = base_lr):
//   StepLR             b * gamma^floor(e / step_size)
//   MultiStepLR        b * gamma^(number of milestones <= e)
//   ExponentialLR      b * gamma^e
//   PolynomialLR       b * (1 - min(e, total_iters) / total_iters)^power
//   CosineAnnealingLR  eta_min + (b - eta_min) * (1 + cos(pi * e / T_max)) / 2
//   LinearWarmup       b * f(e), or f(e) * (the wrapped scheduler's lr at e), with
//                      f(e) = start_factor + (1 - start_factor) * min(e, W) / W,
//                      W = warmup_steps
//   OneCycleLR         piecewise linear, see OneCycleLR below
// These are PyTorch's closed forms (its _get_closed_form_lr; for LinearWarmup, LinearLR's with
// end_factor 1). PyTorch's step() reaches the same values through recursive updates, so the two
// agree to rounding unless something else changes the lr between steps; here the lr never
// depends on what it was before. Those recursive updates are chained_lr(): what
// ChainedScheduler (optim/scheduler_composition.h) applies one scheduler after another, where
// the lr does depend on what it was before, as in PyTorch.
//
// state_dict() is a ScalarMap (JSON-able: optim::to_json): "last_epoch", "base_lrs.<g>",
// "last_lrs.<g>" and the scheduler's settings; load_state_dict() restores all of them and
// rejects missing or unexpected keys. It does not touch the optimizer, whose own state_dict
// holds the current lrs.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "minidl/core/arg.h"
#include "minidl/optim/checkpointable_scheduler.h"
#include "minidl/optim/optimizer.h"
#include "minidl/optim/scalar_map.h"

namespace minidl::optim {

class LRScheduler : public CheckpointableScheduler {
 public:
  // Advances one epoch and sets each group's lr (and momentum, where a scheduler cycles it).
  void step();
  const std::vector<double>& get_last_lr() const override { return last_lrs_; }
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  Optimizer& optimizer() const { return *optimizer_; }

  // The closed form: the lr of param group `group` at epoch `epoch`.
  virtual double lr_at(int64_t epoch, size_t group) const = 0;
  // PyTorch's chainable form (its get_lr()): the lr of `group` at `epoch` when the lr was `lr`
  // at the epoch before (at epoch 0: before the initial step), whatever set it. StepLR
  // multiplies `lr` by gamma at each step_size, CosineAnnealingLR moves it by a ratio of cosines,
  // and so on; ChainedScheduler applies its schedulers' forms one after another. The default
  // sets lr_at(epoch) whatever `lr` was, as PyTorch's OneCycleLR does.
  virtual double chained_lr(double lr, int64_t epoch, size_t group) const;
  // The momentum a scheduler sets at `epoch`, or none (the default: momentum is left alone).
  virtual std::optional<double> momentum_at(int64_t epoch, size_t group) const;

  ScalarMap state_dict() const override;
  void load_state_dict(const ScalarMap& state) override;
  // What the schedule is, apart from where it stands: state_dict() without "last_epoch" and
  // "last_lrs", its own and those of the schedulers it holds. Two schedulers with equal
  // schedule() and last_lrs give every later epoch the same lr, so a training loop compares a
  // checkpoint's with the one a resumed run built (train::Trainer).
  ScalarMap schedule() const override;

 protected:
  // The optimizer must outlive the scheduler.
  explicit LRScheduler(Optimizer& optimizer);
  // Sets epoch 0. Every scheduler's constructor calls it last (virtual calls need the whole
  // object), as PyTorch's _initial_step().
  void initial_step();
  // The lr that the step to `epoch` (last_epoch() + 1, or 0 for the initial step) sets: lr_at,
  // unless the lr depends on the one before (ChainedScheduler).
  virtual double next_lr(int64_t epoch, size_t group) const;
  // For a scheduler holding `held` (made before it): takes the base lrs of the one made first
  // and gives them to all through set_base_lrs, whatever order `held` lists them in. In PyTorch
  // every scheduler of an optimizer takes the lr from before the first one was made
  // (initial_lr); here each takes the lr at its own construction, after the ones made before it
  // set theirs, so only the first one made found the lrs PyTorch's schedulers all start from.
  void adopt_base_lrs_of_first_made(const std::vector<const LRScheduler*>& held);
  // Replaces the base lrs; a scheduler holding others passes them on (with rebase).
  virtual void set_base_lrs(const std::vector<double>& base_lrs);
  // `scheduler.set_base_lrs(base_lrs)`, for a scheduler holding others (a protected member of
  // another object is reachable only through this class).
  static void rebase(LRScheduler& scheduler, const std::vector<double>& base_lrs);
  // The scheduler's own settings, for state_dict / load_state_dict.
  virtual void save_settings(ScalarMap& state) const = 0;
  virtual void load_settings(ScalarMapReader& reader) = 0;

  std::vector<double> base_lrs_;

 private:
  void apply(int64_t epoch);

  Optimizer* optimizer_;
  int64_t last_epoch_ = -1;
  std::vector<double> last_lrs_;
  // When the scheduler was made, counted over the process; for one holding others, when the
  // first of them was.
  uint64_t made_at_;
};

// Multiplies the lr by gamma every step_size epochs.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);
  double lr_at(int64_t epoch, size_t group) const override;
  double chained_lr(double lr, int64_t epoch, size_t group) const override;
  const char* name() const override { return "StepLR"; }

 private:
  void save_settings(ScalarMap& state) const override;
  void load_settings(ScalarMapReader& reader) override;
  int64_t step_size_;
  double gamma_;
};

// Multiplies the lr by gamma at each milestone (an epoch listed twice counts twice).
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);
  double lr_at(int64_t epoch, size_t group) const override;
  double chained_lr(double lr, int64_t epoch, size_t group) const override;
  const char* name() const override { return "MultiStepLR"; }

 private:
  void save_settings(ScalarMap& state) const override;
  void load_settings(ScalarMapReader& reader) override;
  std::vector<int64_t> milestones_;  // sorted
  double gamma_;
};

// Multiplies the lr by gamma every epoch; gamma > 0 (above 1 the lr grows).
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);
  double lr_at(int64_t epoch, size_t group) const override;
  double chained_lr(double lr, int64_t epoch, size_t group) const override;
  const char* name() const override { return "ExponentialLR"; }

 private:
  void save_settings(ScalarMap& state) const override;
  void load_settings(ScalarMapReader& reader) override;
  double gamma_;
};

// Decays the lr to 0 along (1 - e / total_iters)^power over total_iters epochs, then holds 0.
class PolynomialLR : public LRScheduler {
 public:
  explicit PolynomialLR(Optimizer& optimizer, int64_t total_iters = 5, double power = 1.0);
  double lr_at(int64_t epoch, size_t group) const override;
  double chained_lr(double lr, int64_t epoch, size_t group) const override;
  const char* name() const override { return "PolynomialLR"; }

 private:
  void save_settings(ScalarMap& state) const override;
  void load_settings(ScalarMapReader& reader) override;
  int64_t total_iters_;
  double power_;
};

// Half a cosine from base_lr down to eta_min over T_max epochs (and on up again after, as
// PyTorch's closed form does).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0);
  double lr_at(int64_t epoch, size_t group) const override;
  double chained_lr(double lr, int64_t epoch, size_t group) const override;
  const char* name() const override { return "CosineAnnealingLR"; }

 private:
  void save_settings(ScalarMap& state) const override;
  void load_settings(ScalarMapReader& reader) override;
  int64_t T_max_;
  double eta_min_;
};

// Scales the lr linearly from start_factor to 1 over warmup_steps epochs, then leaves it at 1x.
// Alone it scales base_lr; wrapping another scheduler it scales that scheduler's lr at the same
// epoch (the wrapped one is not stepped itself, only asked for lr_at):
//
//   optim::LinearWarmup scheduler(
//       std::make_unique<optim::CosineAnnealingLR>(optimizer, epochs), /*warmup_steps=*/5,
//       /*start_factor=*/0.1);
//
// Its chained_lr is PyTorch LinearLR's (after the wrapped scheduler's own), which divides by
// the factor of the epoch before: chaining it needs start_factor > 0, as LinearLR does.
class LinearWarmup : public LRScheduler {
 public:
  LinearWarmup(Optimizer& optimizer, int64_t warmup_steps, double start_factor);
  LinearWarmup(std::unique_ptr<LRScheduler> wrapped, int64_t warmup_steps, double start_factor);
  double lr_at(int64_t epoch, size_t group) const override;
  double chained_lr(double lr, int64_t epoch, size_t group) const override;
  std::optional<double> momentum_at(int64_t epoch, size_t group) const override;
  // The factor f(epoch) in [start_factor, 1].
  double factor_at(int64_t epoch) const;
  const LRScheduler* wrapped() const { return wrapped_.get(); }
  const char* name() const override { return "LinearWarmup"; }

 private:
  void set_base_lrs(const std::vector<double>& base_lrs) override;
  void save_settings(ScalarMap& state) const override;
  void load_settings(ScalarMapReader& reader) override;
  std::unique_ptr<LRScheduler> wrapped_;  // null when alone
  int64_t warmup_steps_;
  double start_factor_;
};

class OneCycleLROptions {
 public:
  // One max_lr for every group, or one per group.
  OneCycleLROptions(double max_lr, int64_t total_steps)
      : max_lrs_{max_lr}, total_steps_(total_steps) {}
  OneCycleLROptions(std::vector<double> max_lrs, int64_t total_steps)
      : max_lrs_(std::move(max_lrs)), total_steps_(total_steps) {}

  // Set by the constructor only.
  const std::vector<double>& max_lrs() const { return max_lrs_; }
  int64_t total_steps() const { return total_steps_; }

  MINIDL_ARG(double, pct_start) = 0.3;
  MINIDL_ARG(double, div_factor) = 25;
  MINIDL_ARG(double, final_div_factor) = 1e4;
  MINIDL_ARG(bool, three_phase) = false;
  // PyTorch cycles momentum by default; fast CIFAR-10 recipes keep it constant, which is the
  // default here. cycle_momentum(true) gives PyTorch's behaviour.
  MINIDL_ARG(bool, cycle_momentum) = false;
  MINIDL_ARG(double, base_momentum) = 0.85;
  MINIDL_ARG(double, max_momentum) = 0.95;

 private:
  std::vector<double> max_lrs_;
  int64_t total_steps_;
};

// The one-cycle policy with linear annealing: PyTorch's OneCycleLR(anneal_strategy='linear'),
// stepped once per batch. With initial = max_lr / div_factor, min = initial / final_div_factor,
// p = pct_start and T = total_steps, the lr runs linearly between these points:
//
//   two-phase:    (0, initial) -> (p*T - 1, max_lr) -> (T - 1, min)
//   three-phase:  (0, initial) -> (p*T - 1, max_lr) -> (2*p*T - 2, initial) -> (T - 1, min)
//
// that is, in the phase [s0, s1] from lr0 to lr1: lr = (lr1 - lr0) * (e - s0) / (s1 - s0) + lr0.
// Phase ends are real numbers (p*T need not be whole), as in PyTorch. With cycle_momentum,
// momentum runs the other way: max_momentum -> base_momentum -> max_momentum (three-phase: and
// stays at max_momentum in the last phase). Stepping past epoch T is an error. Epoch T, which a
// loop reaches by stepping after its last batch, holds the lr and momentum of epoch T - 1
// (min_lr). Here minidl differs from PyTorch on purpose: PyTorch extrapolates the last phase to
// epoch T, which puts the lr below min_lr, and below zero when min_lr is tiny (-0.0045 for
// max_lr 0.1 over 1000 steps), a value that reaches logs and checkpoints.
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, const OneCycleLROptions& options);
  double lr_at(int64_t epoch, size_t group) const override;
  std::optional<double> momentum_at(int64_t epoch, size_t group) const override;
  const char* name() const override { return "OneCycleLR"; }

 private:
  enum class Point { kInitial, kMax, kMin };  // the per-group lrs a phase runs between
  struct Phase {
    double end_step;
    Point start_lr, end_lr;
    double start_momentum, end_momentum;
  };
  // Checks the options against the optimizer and derives the lrs and phases from them.
  void configure(const OneCycleLROptions& options);
  double lr_of(Point point, size_t group) const;
  // The phase holding `epoch` and how far through it the epoch is (0 at its start, 1 at its
  // end); throws past total_steps.
  std::pair<const Phase*, double> locate(int64_t epoch) const;
  void save_settings(ScalarMap& state) const override;
  void load_settings(ScalarMapReader& reader) override;
  // Its base lrs are max_lr / div_factor by definition (PyTorch's OneCycleLR sets initial_lr so
  // too), whatever a composition gives.
  void set_base_lrs(const std::vector<double>&) override {}

  OneCycleLROptions options_;
  // Per group, computed as PyTorch does: initial = max / div_factor, min = initial / final_div.
  std::vector<double> max_lrs_, initial_lrs_, min_lrs_;
  std::vector<Phase> phases_;
};

}  // namespace minidl::optim
