#include "minidl/optim/rmsprop.h"

#include "minidl/core/dispatch.h"
#include "minidl/core/error.h"
#include "minidl/optim/multi_tensor_kernels.h"
#include "minidl/optim/rmsprop_math.h"

namespace minidl::optim {

namespace {

// The table lists after param and grad, in rmsprop_math.h's order (kRmspropStepList, ...).
const std::vector<StateList> kRmspropStateLists = {
    {"step", "step count", StateInit::kStepCount},
    {"square_avg", "square_avg", StateInit::kZeros},
    {"momentum_buffer", "momentum buffer", StateInit::kZeros},
    {"grad_avg", "grad_avg", StateInit::kZeros},
};
constexpr uint32_t kRmspropAlwaysKept = 0b0011;  // step, square_avg
constexpr uint32_t kRmspropMomentumKeeps = 0b0100;
constexpr uint32_t kRmspropCenteredKeeps = 0b1000;

const RMSpropOptions& as_rmsprop_options(const OptimizerOptions& options,
                                         const std::string& where) {
  const auto* rmsprop = dynamic_cast<const RMSpropOptions*>(&options);
  MINIDL_CHECK(rmsprop != nullptr, where, ": expected RMSpropOptions, got the options of ",
               "another optimizer");
  return *rmsprop;
}

uint32_t kept_state(const RMSpropOptions& options) {
  return kRmspropAlwaysKept | (options.momentum() > 0 ? kRmspropMomentumKeeps : 0u) |
         (options.centered() ? kRmspropCenteredKeeps : 0u);
}

}  // namespace

// ---- RMSpropOptions ----

std::unique_ptr<OptimizerOptions> RMSpropOptions::clone() const {
  return std::make_unique<RMSpropOptions>(*this);
}

ScalarMap RMSpropOptions::to_scalars() const {
  return {{"lr", lr_},
          {"alpha", alpha_},
          {"eps", eps_},
          {"weight_decay", weight_decay_},
          {"momentum", momentum_},
          {"centered", centered_ ? 1.0 : 0.0},
          {"maximize", maximize_ ? 1.0 : 0.0}};
}

void RMSpropOptions::load_scalars(const ScalarMap& scalars, const std::string& what) {
  ScalarMapReader reader(scalars, what);
  RMSpropOptions loaded(reader.number("lr"));
  loaded.alpha(reader.number("alpha"))
      .eps(reader.number("eps"))
      .weight_decay(reader.number("weight_decay"))
      .momentum(reader.number("momentum"))
      .centered(reader.boolean("centered"))
      .maximize(reader.boolean("maximize"));
  reader.finish();
  *this = loaded;
}

// ---- RMSprop ----

RMSprop::RMSprop(std::vector<Tensor> params, const RMSpropOptions& defaults)
    : RMSprop(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

RMSprop::RMSprop(std::vector<OptimizerParamGroup> groups, const RMSpropOptions& defaults)
    : MultiTensorOptimizer(defaults.clone()) {
  add_initial_groups(groups);
}

void RMSprop::check_options(const OptimizerOptions& options, const std::string& where) const {
  const RMSpropOptions& rmsprop = as_rmsprop_options(options, where);
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
  return kept_state(as_rmsprop_options(options, "RMSprop"));
}

void RMSprop::append_group_record(const OptimizerOptions& options,
                                  std::vector<std::byte>& records) const {
  const RMSpropOptions& rmsprop = as_rmsprop_options(options, "RMSprop");
  RmspropGroupParameters record;
  record.lr = rmsprop.lr();
  record.alpha = rmsprop.alpha();
  record.eps = rmsprop.eps();
  record.weight_decay = rmsprop.weight_decay();
  record.momentum = rmsprop.momentum();
  record.centered = rmsprop.centered() ? 1 : 0;
  record.maximize = rmsprop.maximize() ? 1 : 0;
  append_record(record, records);
}

void RMSprop::update(Device device, const MultiTensorArgs& args) const {
  kernels_for<RmspropKernels>(device).update(args);
}

void RMSprop::check_unchanged_since_capture(const OptimizerOptions& at_capture,
                                            const OptimizerOptions& now,
                                            const std::string& where) const {
  const RMSpropOptions& then = as_rmsprop_options(at_capture, where);
  const RMSpropOptions& current = as_rmsprop_options(now, where);
  // The captured table says per parameter which of momentum_buffer and grad_avg exist.
  MINIDL_CHECK((current.momentum() > 0) == (then.momentum() > 0), where, ": momentum is ",
               current.momentum(), " but was ", then.momentum() > 0 ? "positive" : "zero",
               " when the step was captured into a CUDA graph; capture the step again");
  MINIDL_CHECK(current.centered() == then.centered(), where, ": centered is ",
               current.centered() ? "on" : "off", " but was ", then.centered() ? "on" : "off",
               " when the step was captured into a CUDA graph; capture the step again");
}

}  // namespace minidl::optim
