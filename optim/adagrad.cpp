#include "minidl/optim/adagrad.h"

#include "minidl/core/error.h"

namespace minidl::optim {

namespace {

// The table lists after param and grad, in the header's order (kAdagradStepList, ...).
const std::vector<StateList> kAdagradStateLists = {
    {"step", "step count", StateInit::kStepCount},
    {"sum", "sum of squared gradients", StateInit::kFilled},
};
constexpr uint32_t kAdagradKeepsAll = 0b11;

}  // namespace

Adagrad::Adagrad(std::vector<Tensor> params, const AdagradOptions& defaults)
    : Adagrad(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

Adagrad::Adagrad(std::vector<OptimizerParamGroup> groups, const AdagradOptions& defaults)
    : ElementwiseOptimizer(defaults) {
  add_initial_groups(groups);
}

void Adagrad::check_options(const OptimizerOptions& options, const std::string& where) const {
  const AdagradOptions& adagrad = options_of(options, where);
  // torch.optim.Adagrad's checks; negated comparisons, so NaN fails them too.
  MINIDL_CHECK(adagrad.lr() >= 0, where, ": invalid learning rate ", adagrad.lr(),
               "; expected >= 0");
  MINIDL_CHECK(adagrad.lr_decay() >= 0, where, ": invalid lr_decay value ", adagrad.lr_decay(),
               "; expected >= 0");
  MINIDL_CHECK(adagrad.weight_decay() >= 0, where, ": invalid weight_decay value ",
               adagrad.weight_decay(), "; expected >= 0");
  MINIDL_CHECK(adagrad.initial_accumulator_value() >= 0, where,
               ": invalid initial_accumulator_value value ", adagrad.initial_accumulator_value(),
               "; expected >= 0");
  MINIDL_CHECK(adagrad.eps() >= 0, where, ": invalid epsilon value ", adagrad.eps(),
               "; expected >= 0");
}

const std::vector<StateList>& Adagrad::state_lists() const { return kAdagradStateLists; }

uint32_t Adagrad::state_mask(const OptimizerOptions& /*options*/) const { return kAdagradKeepsAll; }

double Adagrad::state_fill_value(const OptimizerOptions& /*group_options*/) const {
  // PyTorch's: every group's sum starts at the defaults' value (Adagrad.__init__ and _init_group
  // read self.defaults), whatever a group's own initial_accumulator_value says.
  return options_of(defaults(), name()).initial_accumulator_value();
}

void Adagrad::check_unchanged_since_capture(const OptimizerOptions& /*at_capture*/,
                                            const OptimizerOptions& /*now*/,
                                            const std::string& /*where*/) const {
  // Every option may change between replays: the state a group keeps never depends on them.
}

}  // namespace minidl::optim
