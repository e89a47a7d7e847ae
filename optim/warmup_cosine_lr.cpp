#include "minidl/optim/warmup_cosine_lr.h"

#include <cmath>
#include <numbers>

#include "minidl/core/error.h"

namespace minidl::optim {

namespace {

void check_warmup_cosine(int64_t warmup_steps, int64_t decay_steps, double min_lr,
                         const char* where) {
  MINIDL_CHECK(warmup_steps >= 0, where, ": expected warmup_steps >= 0, got ", warmup_steps);
  MINIDL_CHECK(decay_steps > warmup_steps, where,
               ": expected decay_steps > warmup_steps (the cosine runs between them), got "
               "decay_steps ",
               decay_steps, " and warmup_steps ", warmup_steps);
  // Negated, so NaN fails too.
  MINIDL_CHECK(min_lr >= 0 && std::isfinite(min_lr), where, ": expected a finite min_lr >= 0, got ",
               min_lr);
}

}  // namespace

WarmupCosineLR::WarmupCosineLR(Optimizer& optimizer, int64_t warmup_steps, int64_t decay_steps,
                               double min_lr)
    : LRScheduler(optimizer),
      warmup_steps_(warmup_steps),
      decay_steps_(decay_steps),
      min_lr_(min_lr) {
  check_warmup_cosine(warmup_steps, decay_steps, min_lr, "WarmupCosineLR");
  initial_step();
}

double WarmupCosineLR::lr_at(int64_t epoch, size_t group) const {
  // nanoGPT's get_lr, in its order of operations (Python's left-to-right float arithmetic).
  const double base_lr = base_lrs_[group];
  if (epoch < warmup_steps_)
    return base_lr * static_cast<double>(epoch + 1) / static_cast<double>(warmup_steps_ + 1);
  if (epoch > decay_steps_) return min_lr_;
  const double decay_ratio = static_cast<double>(epoch - warmup_steps_) /
                             static_cast<double>(decay_steps_ - warmup_steps_);
  const double coeff = 0.5 * (1.0 + std::cos(std::numbers::pi * decay_ratio));
  return min_lr_ + coeff * (base_lr - min_lr_);
}

void WarmupCosineLR::save_settings(ScalarMap& state) const {
  state["warmup_steps"] = static_cast<double>(warmup_steps_);
  state["decay_steps"] = static_cast<double>(decay_steps_);
  state["min_lr"] = min_lr_;
}

void WarmupCosineLR::load_settings(ScalarMapReader& reader) {
  const int64_t warmup_steps = reader.integer("warmup_steps");
  const int64_t decay_steps = reader.integer("decay_steps");
  const double min_lr = reader.number("min_lr");
  check_warmup_cosine(warmup_steps, decay_steps, min_lr, "WarmupCosineLR load_state_dict");
  warmup_steps_ = warmup_steps;
  decay_steps_ = decay_steps;
  min_lr_ = min_lr;
}

}  // namespace minidl::optim
