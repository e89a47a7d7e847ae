#include "minidl/optim/sgd.h"

#include <cmath>

#include "minidl/core/dispatch.h"
#include "minidl/core/error.h"
#include "minidl/optim/multi_tensor_kernels.h"
#include "minidl/optim/sgd_math.h"

namespace minidl::optim {

namespace {

const SGDOptions& as_sgd_options(const OptimizerOptions& options, const std::string& where) {
  const auto* sgd = dynamic_cast<const SGDOptions*>(&options);
  MINIDL_CHECK(sgd != nullptr, where, ": expected SGDOptions, got the options of another ",
               "optimizer");
  return *sgd;
}

SgdGroupParameters group_parameters(const SGDOptions& options) {
  SgdGroupParameters parameters;
  parameters.lr = options.lr();
  parameters.momentum = options.momentum();
  parameters.dampening = options.dampening();
  parameters.weight_decay = options.weight_decay();
  parameters.nesterov = options.nesterov() ? 1 : 0;
  return parameters;
}

// The table lists after param and grad (optim/sgd_math.h's kSgdMomentumBufferList).
const std::vector<StateList> kSgdStateLists = {
    {"momentum_buffer", "momentum buffer", StateInit::kWrittenByFirstStep},
};

}  // namespace

// ---- SGDOptions ----

std::unique_ptr<OptimizerOptions> SGDOptions::clone() const {
  return std::make_unique<SGDOptions>(*this);
}

ScalarMap SGDOptions::to_scalars() const {
  return {{"lr", lr_},
          {"momentum", momentum_},
          {"dampening", dampening_},
          {"weight_decay", weight_decay_},
          {"nesterov", nesterov_ ? 1.0 : 0.0}};
}

void SGDOptions::load_scalars(const ScalarMap& scalars, const std::string& what) {
  ScalarMapReader reader(scalars, what);
  SGDOptions loaded(reader.number("lr"));
  loaded.momentum(reader.number("momentum"))
      .dampening(reader.number("dampening"))
      .weight_decay(reader.number("weight_decay"))
      .nesterov(reader.boolean("nesterov"));
  reader.finish();
  *this = loaded;
}

// ---- SGD ----

SGD::SGD(std::vector<Tensor> params, const SGDOptions& defaults)
    : SGD(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

SGD::SGD(std::vector<OptimizerParamGroup> groups, const SGDOptions& defaults)
    : MultiTensorOptimizer(defaults.clone()) {
  add_initial_groups(groups);
}

void SGD::check_options(const OptimizerOptions& options, const std::string& where) const {
  const SGDOptions& sgd = as_sgd_options(options, where);
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
  return as_sgd_options(options, "SGD").momentum() != 0 ? 1u : 0u;
}

void SGD::append_group_record(const OptimizerOptions& options,
                              std::vector<std::byte>& records) const {
  append_record(group_parameters(as_sgd_options(options, "SGD")), records);
}

void SGD::update(Device device, const MultiTensorArgs& args) const {
  kernels_for<SgdKernels>(device).update(args);
}

void SGD::check_unchanged_since_capture(const OptimizerOptions& at_capture,
                                        const OptimizerOptions& now,
                                        const std::string& where) const {
  const double momentum_then = as_sgd_options(at_capture, where).momentum();
  const double momentum_now = as_sgd_options(now, where).momentum();
  // The captured table says per parameter whether a momentum buffer exists.
  MINIDL_CHECK((momentum_now != 0) == (momentum_then != 0), where, ": momentum is ", momentum_now,
               " but was ", momentum_then != 0 ? "nonzero" : "zero",
               " when the step was captured into a CUDA graph; capture the step again");
}

}  // namespace minidl::optim
