#pragma once
// nanoGPT's learning-rate schedule (its train.py get_lr), stepped once per optimizer step: a
// linear warm-up, then half a cosine down to min_lr, then min_lr.
//
//   optim::AdamW optimizer(groups, optim::AdamWOptions(1e-3).betas({0.9, 0.99}));
//   optim::WarmupCosineLR scheduler(optimizer, /*warmup_steps=*/100, /*decay_steps=*/2000,
//                                   /*min_lr=*/1e-4);
//
// With b = base_lr, W = warmup_steps, D = decay_steps and e = last_epoch (the 0-based step
// whose update the lr is for), in nanoGPT's order of operations:
//   e <  W         b * (e + 1) / (W + 1)
//   e >  D         min_lr
//   otherwise      min_lr + 0.5 * (1 + cos(pi * (e - W) / (D - W))) * (b - min_lr)
//
// Why not a composition of LinearWarmup and CosineAnnealingLR (optim/scheduler_composition.h):
// LinearWarmup's factor start + (1 - start) * e / W with start = 1 / (W + 1) is (e + 1) / (W + 1)
// only up to rounding, and its cosine would have to start at the end of the warm-up inside a
// SequentialLR, where CosineAnnealingLR's (b - eta_min) * (1 + cos) / 2 rounds otherwise than
// nanoGPT's 0.5 * (1 + cos) * (b - min_lr): for the recipe (W 100, D 2000) 34 of the warm-up's
// lrs and 443 of the cosine's differ in their last bits. The GPT recipe's PyTorch twin uses
// nanoGPT's get_lr, so this schedule computes it as written (tests/optim/warmup_cosine_lr_test.cpp
// compares the values bit for bit).
#include <cstdint>

#include "minidl/optim/lr_scheduler.h"

namespace minidl::optim {

class WarmupCosineLR : public LRScheduler {
 public:
  // warmup_steps >= 0, decay_steps > warmup_steps, min_lr >= 0 (one for every group, as
  // nanoGPT's single lr has one).
  WarmupCosineLR(Optimizer& optimizer, int64_t warmup_steps, int64_t decay_steps, double min_lr);
  double lr_at(int64_t epoch, size_t group) const override;
  const char* name() const override { return "WarmupCosineLR"; }

  int64_t warmup_steps() const { return warmup_steps_; }
  int64_t decay_steps() const { return decay_steps_; }
  double min_lr() const { return min_lr_; }

 private:
  void save_settings(ScalarMap& state) const override;
  void load_settings(ScalarMapReader& reader) override;
  int64_t warmup_steps_;
  int64_t decay_steps_;
  double min_lr_;
};

}  // namespace minidl::optim
