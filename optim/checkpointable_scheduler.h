#pragma once
// What every learning-rate scheduler shares, whatever drives it: the epoch-driven LRScheduler
// family (step(), optim/lr_scheduler.h, and the compositions in optim/scheduler_composition.h)
// and the metric-driven ReduceLROnPlateau (step(metric), optim/reduce_lr_on_plateau.h). How a
// scheduler is stepped differs, so stepping is not part of this interface; a training loop
// steps the scheduler it knows, and checkpoints and checks any one through this.
#include <vector>

#include "minidl/optim/scalar_map.h"

namespace minidl::optim {

class CheckpointableScheduler {
 public:
  virtual ~CheckpointableScheduler() = default;

  // "StepLR", for messages.
  virtual const char* name() const = 0;
  // The lrs the last step set, one per param group.
  virtual const std::vector<double>& get_last_lr() const = 0;
  // Where the scheduler stands and its settings, as a JSON-able map.
  virtual ScalarMap state_dict() const = 0;
  // Restores state_dict() output; rejects missing or unexpected keys and changes nothing then.
  virtual void load_state_dict(const ScalarMap& state) = 0;
  // The settings alone, without where the scheduler stands: two schedulers with equal
  // schedule() behave alike from equal states, so a resumed run compares a checkpoint's with
  // its own (train::Trainer).
  virtual ScalarMap schedule() const = 0;

 protected:
  CheckpointableScheduler() = default;
  CheckpointableScheduler(const CheckpointableScheduler&) = delete;
  CheckpointableScheduler& operator=(const CheckpointableScheduler&) = delete;
};

}  // namespace minidl::optim
