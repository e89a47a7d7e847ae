#include "minidl/optim/rmsprop.h"

#include "minidl/core/error.h"

namespace minidl::optim {

namespace {

// The table lists after param and grad, in the header's order (kRmspropStepList, ...).
const std::vector<StateList> kRmspropStateLists = {
    {"step", "step count", StateInit::kStepCount},
    {"square_avg", "square_avg", StateInit::kZeros},
    {"momentum_buffer", "momentum buffer", StateInit::kZeros},
    {"grad_avg", "grad_avg", StateInit::kZeros},
};
constexpr uint32_t kRmspropAlwaysKept = 0b0011;  // step, square_avg
constexpr uint32_t kRmspropMomentumKeeps = 0b0100;
constexpr uint32_t kRmspropCenteredKeeps = 0b1000;

uint32_t kept_state(const RMSpropOptions& options) {
  return kRmspropAlwaysKept | (options.momentum() > 0 ? kRmspropMomentumKeeps : 0u) |
         (options.centered() ? kRmspropCenteredKeeps : 0u);
}

}  // namespace

RMSprop::RMSprop(std::vector<Tensor> params, const RMSpropOptions& defaults)
    : RMSprop(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

RMSprop::RMSprop(std::vector<OptimizerParamGroup> groups, const RMSpropOptions& defaults)
    : ElementwiseOptimizer(defaults) {
  add_initial_groups(groups);
}

void RMSprop::check_options(const OptimizerOptions& options, const std::string& where) const {
  const RMSpropOptions& rmsprop = options_of(options, where);
  // torch.optim.RMSprop's checks; negated comparisons, so NaN fails them too.
  MINIDL_CHECK(rmsprop.lr() >= 0, where, ": invalid learning rate ", rmsprop.lr(),
               "; expected >= 0");
  MINIDL_CHECK(rmsprop.eps() >= 0, where, ": invalid epsilon value ", rmsprop.eps(),
               "; expected >= 0");
  MINIDL_CHECK(rmsprop.momentum() >= 0, where, ": invalid momentum value ", rmsprop.momentum(),
               "; expected >= 0");
  MINIDL_CHECK(rmsprop.weight_decay() >= 0, where, ": invalid weight_decay value ",
               rmsprop.weight_decay(), "; expected >= 0");
  MINIDL_CHECK(rmsprop.alpha() >= 0, where, ": invalid alpha value ", rmsprop.alpha(),
               "; expected >= 0");
}

const std::vector<StateList>& RMSprop::state_lists() const { return kRmspropStateLists; }

uint32_t RMSprop::state_mask(const OptimizerOptions& options) const {
  return kept_state(options_of(options, name()));
}

void RMSprop::check_unchanged_since_capture(const OptimizerOptions& at_capture,
                                            const OptimizerOptions& now,
                                            const std::string& where) const {
  const RMSpropOptions& then = options_of(at_capture, where);
  const RMSpropOptions& current = options_of(now, where);
  // The captured table says per parameter which of momentum_buffer and grad_avg exist.
  MINIDL_CHECK((current.momentum() > 0) == (then.momentum() > 0), where, ": momentum is ",
               current.momentum(), " but was ", then.momentum() > 0 ? "positive" : "zero",
               " when the step was captured into a CUDA graph; capture the step again");
  MINIDL_CHECK(current.centered() == then.centered(), where, ": centered is ",
               current.centered() ? "on" : "off", " but was ", then.centered() ? "on" : "off",
               " when the step was captured into a CUDA graph; capture the step again");
}

}  // namespace minidl::optim
