#include "minidl/optim/adam.h"

#include <type_traits>

#include "minidl/core/dispatch.h"
#include "minidl/core/error.h"
#include "minidl/optim/adam_math.h"
#include "minidl/optim/multi_tensor_kernels.h"

namespace minidl::optim {

namespace {

// The table lists after param and grad, in adam_math.h's order (kAdamStepList, ...).
const std::vector<StateList> kAdamStateLists = {
    {"step", "step count", StateInit::kStepCount},
    {"exp_avg", "exp_avg (first moment)", StateInit::kZeros},
    {"exp_avg_sq", "exp_avg_sq (second moment)", StateInit::kZeros},
    {"max_exp_avg_sq", "max_exp_avg_sq (amsgrad's maximum)", StateInit::kZeros},
};
constexpr uint32_t kAdamAlwaysKept = 0b0111;  // step, exp_avg, exp_avg_sq
constexpr uint32_t kAdamAmsgradKeeps = 0b1000;

template <class Options>
const Options& as_options(const OptimizerOptions& options, const std::string& where,
                          const char* expected) {
  const auto* adam = dynamic_cast<const Options*>(&options);
  MINIDL_CHECK(adam != nullptr, where, ": expected ", expected, ", got the options of another ",
               "optimizer");
  return *adam;
}

}  // namespace

// ---- AdamOptionsBase ----

template <class Self>
std::unique_ptr<OptimizerOptions> AdamOptionsBase<Self>::clone() const {
  return std::make_unique<Self>(static_cast<const Self&>(*this));
}

template <class Self>
ScalarMap AdamOptionsBase<Self>::to_scalars() const {
  // PyTorch's betas tuple, flattened: a ScalarMap holds numbers only.
  return {{"lr", lr_},
          {"betas.0", betas_.first},
          {"betas.1", betas_.second},
          {"eps", eps_},
          {"weight_decay", weight_decay_},
          {"amsgrad", amsgrad_ ? 1.0 : 0.0},
          {"maximize", maximize_ ? 1.0 : 0.0}};
}

template <class Self>
void AdamOptionsBase<Self>::load_scalars(const ScalarMap& scalars, const std::string& what) {
  ScalarMapReader reader(scalars, what);
  Self loaded(reader.number("lr"));
  const double beta1 = reader.number("betas.0");
  loaded.betas({beta1, reader.number("betas.1")})
      .eps(reader.number("eps"))
      .weight_decay(reader.number("weight_decay"))
      .amsgrad(reader.boolean("amsgrad"))
      .maximize(reader.boolean("maximize"));
  reader.finish();
  static_cast<Self&>(*this) = loaded;
}

template class AdamOptionsBase<AdamOptions>;
template class AdamOptionsBase<AdamWOptions>;

// ---- Adam and AdamW ----

template <class Options>
const char* AdamFamily<Options>::name() const {
  return std::is_same_v<Options, AdamOptions> ? "Adam" : "AdamW";
}

template <class Options>
AdamFamily<Options>::AdamFamily(std::vector<Tensor> params, const Options& defaults)
    : AdamFamily(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))},
                 defaults) {}

template <class Options>
AdamFamily<Options>::AdamFamily(std::vector<OptimizerParamGroup> groups, const Options& defaults)
    : MultiTensorOptimizer(defaults.clone()) {
  add_initial_groups(groups);
}

template <class Options>
void AdamFamily<Options>::check_options(const OptimizerOptions& options,
                                        const std::string& where) const {
  const Options& adam = as_options<Options>(
      options, where, std::is_same_v<Options, AdamOptions> ? "AdamOptions" : "AdamWOptions");
  // torch.optim.Adam's checks; negated comparisons, so NaN fails them too.
  MINIDL_CHECK(adam.lr() >= 0, where, ": invalid learning rate ", adam.lr(), "; expected >= 0");
  MINIDL_CHECK(adam.eps() >= 0, where, ": invalid epsilon value ", adam.eps(), "; expected >= 0");
  const auto [beta1, beta2] = adam.betas();
  MINIDL_CHECK(beta1 >= 0 && beta1 < 1, where, ": invalid beta parameter at index 0: ", beta1,
               "; expected 0 <= beta < 1");
  MINIDL_CHECK(beta2 >= 0 && beta2 < 1, where, ": invalid beta parameter at index 1: ", beta2,
               "; expected 0 <= beta < 1");
  MINIDL_CHECK(adam.weight_decay() >= 0, where, ": invalid weight_decay value ",
               adam.weight_decay(), "; expected >= 0");
}

template <class Options>
const std::vector<StateList>& AdamFamily<Options>::state_lists() const {
  return kAdamStateLists;
}

template <class Options>
uint32_t AdamFamily<Options>::state_mask(const OptimizerOptions& options) const {
  const bool amsgrad = as_options<Options>(options, name(), "its own options").amsgrad();
  return kAdamAlwaysKept | (amsgrad ? kAdamAmsgradKeeps : 0u);
}

template <class Options>
void AdamFamily<Options>::append_group_record(const OptimizerOptions& options,
                                              std::vector<std::byte>& records) const {
  const Options& adam = as_options<Options>(options, name(), "its own options");
  AdamGroupParameters record;
  record.lr = adam.lr();
  record.beta1 = adam.betas().first;
  record.beta2 = adam.betas().second;
  record.eps = adam.eps();
  record.weight_decay = adam.weight_decay();
  record.amsgrad = adam.amsgrad() ? 1 : 0;
  record.maximize = adam.maximize() ? 1 : 0;
  record.decoupled_weight_decay = std::is_same_v<Options, AdamWOptions> ? 1 : 0;
  append_record(record, records);
}

template <class Options>
void AdamFamily<Options>::update(Device device, const MultiTensorArgs& args) const {
  kernels_for<AdamKernels>(device).update(args);
}

template <class Options>
void AdamFamily<Options>::check_unchanged_since_capture(const OptimizerOptions& at_capture,
                                                        const OptimizerOptions& now,
                                                        const std::string& where) const {
  const bool amsgrad_then = as_options<Options>(at_capture, where, "its own options").amsgrad();
  const bool amsgrad_now = as_options<Options>(now, where, "its own options").amsgrad();
  // The captured table says per parameter whether max_exp_avg_sq exists.
  MINIDL_CHECK(amsgrad_now == amsgrad_then, where, ": amsgrad is ", amsgrad_now ? "on" : "off",
               " but was ", amsgrad_then ? "on" : "off",
               " when the step was captured into a CUDA graph; capture the step again");
}

template class AdamFamily<AdamOptions>;
template class AdamFamily<AdamWOptions>;

}  // namespace minidl::optim
