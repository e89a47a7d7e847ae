#pragma once
// Schedulers made of schedulers, as PyTorch's SequentialLR and ChainedScheduler:
//
//   std::vector<std::unique_ptr<optim::LRScheduler>> phases;
//   phases.push_back(std::make_unique<optim::LinearWarmup>(optimizer, 5, 0.1));
//   phases.push_back(std::make_unique<optim::CosineAnnealingLR>(optimizer, epochs - 5));
//   optim::SequentialLR scheduler(optimizer, std::move(phases), /*milestones=*/{5});
//
// The composition owns its schedulers and is the only one stepped: it asks them for lrs (lr_at,
// chained_lr) and writes the result, so their own last_epoch stays 0. Make them on the
// optimizer the composition schedules, one after another, with nothing else setting lrs in
// between: as in PyTorch, where every scheduler of an optimizer takes the lr from before the
// first one was made (initial_lr), all of them get the base lrs of the one made first (which
// found the lrs before any of them set theirs), whatever order they are listed in.
// Constructing the composition performs its initial step.
//
// state_dict() holds the composition's own state and settings and each scheduler's state_dict
// under "schedulers.<i>.".
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "minidl/optim/lr_scheduler.h"

namespace minidl::optim {

// Runs schedulers one after another: schedulers[0] from epoch 0, schedulers[i] from
// milestones[i - 1] on, restarted at its own epoch 0 there. With m the last milestone <= e (0
// before the first), the lr at epoch e is that scheduler's lr_at(e - m): the closed form of
// PyTorch's SequentialLR, which steps the scheduler at a milestone with step(0) (its closed
// form at epoch 0), so the lr jumps to where the next scheduler starts, not on from where the
// previous one left it (an ExponentialLR after a warmup restarts at base_lr).
// Milestones: one fewer than the schedulers, > 0, strictly increasing. A ChainedScheduler held
// here restarts at its milestone too (PyTorch's cannot), replaying its chain at every step.
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::unique_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones);
  double lr_at(int64_t epoch, size_t group) const override;
  // At a milestone, the next scheduler's lr_at(0) whatever `lr` was; otherwise the running
  // scheduler's chained_lr at its own epoch. At epoch 0, the first scheduler's from base_lr:
  // PyTorch's SequentialLR resets the lr to initial_lr when it is made.
  double chained_lr(double lr, int64_t epoch, size_t group) const override;
  std::optional<double> momentum_at(int64_t epoch, size_t group) const override;
  const char* name() const override { return "SequentialLR"; }

  const std::vector<std::unique_ptr<LRScheduler>>& schedulers() const { return schedulers_; }
  const std::vector<int64_t>& milestones() const { return milestones_; }

 private:
  // The scheduler that runs at `epoch` and the epoch it started at.
  std::pair<const LRScheduler*, int64_t> running_at(int64_t epoch) const;
  void set_base_lrs(const std::vector<double>& base_lrs) override;
  void save_settings(ScalarMap& state) const override;
  void load_settings(ScalarMapReader& reader) override;

  std::vector<std::unique_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

// Applies every scheduler's step, in order, to the lr the last step left: PyTorch's
// ChainedScheduler, which calls each scheduler's step() on the optimizer's current lr. Each
// step is the scheduler's chained_lr (PyTorch's recursive get_lr), so the effects multiply for
// the multiplicative schedulers (StepLR, MultiStepLR, ExponentialLR, PolynomialLR,
// LinearWarmup): a warmup chained with an ExponentialLR decays while it warms up. A
// CosineAnnealingLR moves the lr by a ratio of cosines around its eta_min, so after another
// scheduler's change it no longer ends at eta_min: the lrs depend on the order of the chain,
// and are PyTorch's, not a product of closed forms. The lr at epoch 0 is each initial step in
// turn from base_lr (a warmup's start_factor applies, the others leave it).
//
// Unlike the closed forms, the lr depends on the lr before: step() continues from
// get_last_lr() (which state_dict() saves, so a resumed chain goes on exactly), and lr_at
// replays the chain from epoch 0, which costs `epoch` steps.
class ChainedScheduler : public LRScheduler {
 public:
  // Every scheduler must schedule the same optimizer, the chain's.
  explicit ChainedScheduler(std::vector<std::unique_ptr<LRScheduler>> schedulers);
  double lr_at(int64_t epoch, size_t group) const override;
  // Each scheduler's chained_lr in turn.
  double chained_lr(double lr, int64_t epoch, size_t group) const override;
  // The last scheduler's that sets one, as the last step() of PyTorch's chain wins.
  std::optional<double> momentum_at(int64_t epoch, size_t group) const override;
  const char* name() const override { return "ChainedScheduler"; }

  const std::vector<std::unique_ptr<LRScheduler>>& schedulers() const { return schedulers_; }

 private:
  double next_lr(int64_t epoch, size_t group) const override;
  void set_base_lrs(const std::vector<double>& base_lrs) override;
  void save_settings(ScalarMap& state) const override;
  void load_settings(ScalarMapReader& reader) override;

  std::vector<std::unique_ptr<LRScheduler>> schedulers_;
};

}  // namespace minidl::optim
