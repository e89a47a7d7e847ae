#include "minidl/optim/adam.h"

#include <type_traits>

#include "minidl/core/error.h"

namespace minidl::optim {

namespace {

// The table lists after param and grad, in the header's order (kAdamStepList, ...).
const std::vector<StateList> kAdamStateLists = {
    {"step", "step count", StateInit::kStepCount},
    {"exp_avg", "exp_avg (first moment)", StateInit::kZeros},
    {"exp_avg_sq", "exp_avg_sq (second moment)", StateInit::kZeros},
    {"max_exp_avg_sq", "max_exp_avg_sq (amsgrad's maximum)", StateInit::kZeros},
};
constexpr uint32_t kAdamAlwaysKept = 0b0111;  // step, exp_avg, exp_avg_sq
constexpr uint32_t kAdamAmsgradKeeps = 0b1000;

}  // namespace

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
    : ElementwiseOptimizer<Options, AdamOp>(defaults) {
  this->add_initial_groups(groups);
}

template <class Options>
void AdamFamily<Options>::check_options(const OptimizerOptions& options,
                                        const std::string& where) const {
  const Options& adam = options_of(options, where);
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
  const bool amsgrad = options_of(options, name()).amsgrad();
  return kAdamAlwaysKept | (amsgrad ? kAdamAmsgradKeeps : 0u);
}

template <class Options>
void AdamFamily<Options>::check_unchanged_since_capture(const OptimizerOptions& at_capture,
                                                        const OptimizerOptions& now,
                                                        const std::string& where) const {
  const bool amsgrad_then = options_of(at_capture, where).amsgrad();
  const bool amsgrad_now = options_of(now, where).amsgrad();
  // The captured table says per parameter whether max_exp_avg_sq exists.
  MINIDL_CHECK(amsgrad_now == amsgrad_then, where, ": amsgrad is ", amsgrad_now ? "on" : "off",
               " but was ", amsgrad_then ? "on" : "off",
               " when the step was captured into a CUDA graph; capture the step again");
}

template class AdamFamily<AdamOptions>;
template class AdamFamily<AdamWOptions>;

}  // namespace minidl::optim
