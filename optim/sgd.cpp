#include "minidl/optim/sgd.h"

#include <cmath>

#include "minidl/core/error.h"

namespace minidl::optim {

namespace {

// The table lists after param and grad (the header's kSgdMomentumBufferList).
const std::vector<StateList> kSgdStateLists = {
    {"momentum_buffer", "momentum buffer", StateInit::kWrittenByFirstStep},
};

}  // namespace

SGD::SGD(std::vector<Tensor> params, const SGDOptions& defaults)
    : SGD(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

SGD::SGD(std::vector<OptimizerParamGroup> groups, const SGDOptions& defaults)
    : ElementwiseOptimizer(defaults) {
  add_initial_groups(groups);
}

void SGD::check_options(const OptimizerOptions& options, const std::string& where) const {
  const SGDOptions& sgd = options_of(options, where);
  // Negated comparisons, so NaN fails them too.
  MINIDL_CHECK(sgd.lr() >= 0, where, ": invalid learning rate ", sgd.lr(), "; expected >= 0");
  MINIDL_CHECK(sgd.momentum() >= 0, where, ": invalid momentum ", sgd.momentum(),
               "; expected >= 0");
  MINIDL_CHECK(!std::isnan(sgd.dampening()), where, ": dampening is NaN");
  MINIDL_CHECK(sgd.weight_decay() >= 0, where, ": invalid weight_decay ", sgd.weight_decay(),
               "; expected >= 0");
  MINIDL_CHECK(!sgd.nesterov() || (sgd.momentum() > 0 && sgd.dampening() == 0), where,
               ": Nesterov momentum requires a momentum > 0 and zero dampening, got momentum ",
               sgd.momentum(), " and dampening ", sgd.dampening());
}

const std::vector<StateList>& SGD::state_lists() const { return kSgdStateLists; }

uint32_t SGD::state_mask(const OptimizerOptions& options) const {
  return options_of(options, name()).momentum() != 0 ? 1u : 0u;
}

void SGD::check_unchanged_since_capture(const OptimizerOptions& at_capture,
                                        const OptimizerOptions& now,
                                        const std::string& where) const {
  const double momentum_then = options_of(at_capture, where).momentum();
  const double momentum_now = options_of(now, where).momentum();
  // The captured table says per parameter whether a momentum buffer exists.
  MINIDL_CHECK((momentum_now != 0) == (momentum_then != 0), where, ": momentum is ", momentum_now,
               " but was ", momentum_then != 0 ? "nonzero" : "zero",
               " when the step was captured into a CUDA graph; capture the step again");
}

}  // namespace minidl::optim
