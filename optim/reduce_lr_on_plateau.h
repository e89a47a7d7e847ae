#pragma once
// ReduceLROnPlateau: multiplies the lrs by `factor` when a metric has stopped improving for
// `patience` epochs, as torch.optim.lr_scheduler.ReduceLROnPlateau:
//
//   optim::ReduceLROnPlateau scheduler(
//       optimizer, optim::ReduceLROnPlateauOptions().factor(0.5).patience(5));
//   for (int64_t epoch = 0; epoch < epochs; ++epoch) {
//     train_one_epoch(...);
//     scheduler.step(/*metric=*/validation_loss());
//   }
//
// PyTorch's rules, in its order, for each step(metric):
//   1. The metric is better when, with best the best so far (at first the mode's worst, +inf
//      or -inf) and t = threshold, it is below best * (1 - t) (mode min, relative threshold),
//      below best - t (min, absolute), above best * (1 + t) (max, relative) or above best + t
//      (max, absolute). A better metric becomes best and sets num_bad_epochs to 0; any other
//      adds one to num_bad_epochs (NaN is never better).
//   2. In cooldown (cooldown_counter > 0), cooldown_counter counts down and num_bad_epochs
//      goes back to 0.
//   3. When num_bad_epochs > patience, each group's lr becomes max(lr * factor, min_lr), but
//      only where that lowers it by more than eps; then cooldown_counter = cooldown and
//      num_bad_epochs = 0.
// The lr reduced is the optimizer's current one, as in PyTorch: the scheduler writes an lr
// only when it reduces it, so another scheduler, or the user, may set lrs between its steps.
//
// Why it is not an LRScheduler: LRScheduler's contract is step() without arguments, the lr a
// closed form of the epoch (lr_at) and set at every step. Here the lr follows the history of a
// metric, which no step() without one can advance and no lr_at can compute. (PyTorch derives
// it from LRScheduler all the same and overrides step with another signature, so its
// SequentialLR and ChainedScheduler must reject it at run time; here the compiler does.) What
// the two share, state_dict and the rest a training loop checkpoints, is
// CheckpointableScheduler.
//
// state_dict(): "last_epoch" (the steps taken), "num_bad_epochs", "cooldown_counter", the best
// metric as "best" when it is finite, else as "best_infinity" = -1 or +1 (JSON has no
// infinity; best starts at the mode's worst), "last_lrs.<g>", and the settings: "mode" (0 min,
// 1 max), "factor", "patience", "threshold", "threshold_mode" (0 relative, 1 absolute),
// "cooldown", "eps", and "min_lr" (one for every group) or "min_lrs.<g>". load_state_dict()
// restores all of them and rejects missing or unexpected keys; as in PyTorch, it does not touch
// the optimizer's lrs, which the optimizer's own state_dict holds.
#include <cstdint>
#include <utility>
#include <vector>

#include "minidl/core/arg.h"
#include "minidl/optim/checkpointable_scheduler.h"
#include "minidl/optim/optimizer.h"
#include "minidl/optim/scalar_map.h"

namespace minidl::optim {

// Whether a lower metric is better (a loss: kMin) or a higher one (an accuracy: kMax).
enum class PlateauMode { kMin, kMax };
// Whether the threshold is a fraction of the best metric (kRelative) or a distance (kAbsolute).
enum class ThresholdMode { kRelative, kAbsolute };

class ReduceLROnPlateauOptions {
 public:
  ReduceLROnPlateauOptions() = default;

  // One lower bound for every param group's lr (also for groups added later).
  ReduceLROnPlateauOptions& min_lr(double value) {
    min_lrs_ = {value};
    min_lr_per_group_ = false;
    return *this;
  }
  // One lower bound per param group.
  ReduceLROnPlateauOptions& min_lrs(std::vector<double> values) {
    min_lrs_ = std::move(values);
    min_lr_per_group_ = true;
    return *this;
  }
  // One value (min_lr_per_group() false) or one per group.
  const std::vector<double>& min_lrs() const { return min_lrs_; }
  bool min_lr_per_group() const { return min_lr_per_group_; }

  MINIDL_ARG(PlateauMode, mode) = PlateauMode::kMin;
  // What the lr is multiplied by at a reduction, in [0, 1).
  MINIDL_ARG(double, factor) = 0.1;
  // The epochs without improvement tolerated before a reduction.
  MINIDL_ARG(int64_t, patience) = 10;
  // How much better than the best a metric must be to count as better, >= 0.
  MINIDL_ARG(double, threshold) = 1e-4;
  MINIDL_ARG(ThresholdMode, threshold_mode) = ThresholdMode::kRelative;
  // The epochs after a reduction during which bad epochs are not counted.
  MINIDL_ARG(int64_t, cooldown) = 0;
  // A reduction smaller than this is skipped.
  MINIDL_ARG(double, eps) = 1e-8;

 private:
  std::vector<double> min_lrs_{0.0};
  bool min_lr_per_group_ = false;
};

class ReduceLROnPlateau : public CheckpointableScheduler {
 public:
  // The optimizer must outlive the scheduler. Unlike the LRSchedulers, constructing it changes
  // no lr.
  explicit ReduceLROnPlateau(Optimizer& optimizer, const ReduceLROnPlateauOptions& options = {});

  // One epoch's metric; reduces the lrs when the rules above say so.
  void step(double metric);

  const char* name() const override { return "ReduceLROnPlateau"; }
  // The optimizer's lrs after the last step (at first, when the scheduler was made).
  const std::vector<double>& get_last_lr() const override { return last_lrs_; }
  int64_t last_epoch() const { return last_epoch_; }
  double best() const { return best_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  int64_t cooldown_counter() const { return cooldown_counter_; }
  bool in_cooldown() const { return cooldown_counter_ > 0; }
  const ReduceLROnPlateauOptions& options() const { return options_; }
  Optimizer& optimizer() const { return *optimizer_; }

  ScalarMap state_dict() const override;
  void load_state_dict(const ScalarMap& state) override;
  ScalarMap schedule() const override;

 private:
  bool is_better(double metric) const;
  // The lower bound of group `group`'s lr.
  double min_lr(size_t group) const;
  std::vector<double> current_lrs() const;
  void save_settings(ScalarMap& state) const;
  static ReduceLROnPlateauOptions load_settings(ScalarMapReader& reader, size_t num_groups);

  Optimizer* optimizer_;
  ReduceLROnPlateauOptions options_;
  int64_t last_epoch_ = 0;
  double best_;
  int64_t num_bad_epochs_ = 0;
  int64_t cooldown_counter_ = 0;
  std::vector<double> last_lrs_;
};

}  // namespace minidl::optim
