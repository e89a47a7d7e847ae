#include "minidl/optim/optimizer.h"

#include <unordered_set>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/error.h"

namespace minidl::optim {

// ---- OptimizerParamGroup ----

OptimizerParamGroup::OptimizerParamGroup(std::vector<Tensor> params) : params_(std::move(params)) {}

OptimizerParamGroup::OptimizerParamGroup(std::vector<Tensor> params,
                                         const OptimizerOptions& options)
    : params_(std::move(params)), options_(options.clone()) {}

OptimizerParamGroup::OptimizerParamGroup(const OptimizerParamGroup& other)
    : params_(other.params_), options_(other.options_ ? other.options_->clone() : nullptr) {}

OptimizerParamGroup& OptimizerParamGroup::operator=(const OptimizerParamGroup& other) {
  if (this != &other) {
    params_ = other.params_;
    options_ = other.options_ ? other.options_->clone() : nullptr;
  }
  return *this;
}

OptimizerOptions& OptimizerParamGroup::options() {
  MINIDL_CHECK(options_ != nullptr, "OptimizerParamGroup::options: this group has no options; ",
               "groups get the optimizer's defaults when they are added to it");
  return *options_;
}

const OptimizerOptions& OptimizerParamGroup::options() const {
  MINIDL_CHECK(options_ != nullptr, "OptimizerParamGroup::options: this group has no options; ",
               "groups get the optimizer's defaults when they are added to it");
  return *options_;
}

// ---- Optimizer ----

Optimizer::Optimizer(std::unique_ptr<OptimizerOptions> defaults) : defaults_(std::move(defaults)) {
  MINIDL_INTERNAL_ASSERT(defaults_ != nullptr, "an optimizer needs default options");
}

void Optimizer::add_param_group(const OptimizerParamGroup& group) {
  const std::string where = detail::concat(name(), ": param group ", groups_.size());
  OptimizerParamGroup added = group;
  if (!added.has_options()) added.set_options(defaults_->clone());
  check_options(added.options(), where);

  std::unordered_set<const TensorImpl*> known;
  for (const OptimizerParamGroup& existing : groups_)
    for (const Tensor& param : existing.params()) known.insert(param.unsafe_impl());
  for (size_t i = 0; i < added.params().size(); ++i) {
    const Tensor& param = added.params()[i];
    MINIDL_CHECK(param.defined(), where, ": parameter ", i, " is undefined");
    MINIDL_CHECK(param.is_leaf(), where, ": parameter ", i, " of shape ", param.sizes(),
                 " is not a leaf tensor (it has a grad_fn); only leaves can be optimized");
    MINIDL_CHECK(known.insert(param.unsafe_impl()).second, where, ": parameter ", i, " of shape ",
                 param.sizes(), " appears more than once; a parameter may ",
                 "belong to one group only, once");
  }
  groups_.push_back(std::move(added));
}

void Optimizer::step_unless_found_inf(const Tensor& found_inf) {
  if (found_inf.item<float>() == 0.0f) step();
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (OptimizerParamGroup& group : groups_) {
    for (Tensor& param : group.params()) {
      Tensor grad = param.grad();
      if (!grad.defined()) continue;
      if (set_to_none)
        param.set_grad(Tensor());
      else
        grad.zero_();
    }
  }
}

std::vector<Tensor> Optimizer::parameters() const {
  std::vector<Tensor> all;
  for (const OptimizerParamGroup& group : groups_)
    all.insert(all.end(), group.params().begin(), group.params().end());
  return all;
}

const ParamState* Optimizer::state(const Tensor& param) const {
  const auto found = state_.find(param.unsafe_impl());
  return found == state_.end() ? nullptr : &found->second;
}

ParamState& Optimizer::mutable_state(const Tensor& param) { return state_[param.unsafe_impl()]; }

OptimizerStateDict Optimizer::state_dict() const {
  NoGradGuard no_grad;
  OptimizerStateDict result;
  int64_t position = 0;
  for (const OptimizerParamGroup& group : groups_) {
    OptimizerStateDict::ParamGroup saved;
    saved.options = group.options().to_scalars();
    for (const Tensor& param : group.params()) {
      if (const ParamState* param_state = state(param); param_state && !param_state->empty()) {
        ParamState& copy = result.state[position];
        for (const auto& [key, value] : *param_state) copy.emplace(key, value.clone());
      }
      saved.params.push_back(position++);
    }
    result.param_groups.push_back(std::move(saved));
  }
  return result;
}

Tensor Optimizer::make_loaded_state(const Tensor& param, const std::string& /*key*/,
                                    const Tensor& value) const {
  Tensor copy = value.sizes() == param.sizes()
                    ? empty_strided(param.sizes(), param.strides(), param.options())
                    : empty(value.sizes(), TensorOptions(value.dtype()).device(param.device()));
  copy.copy_(value);
  return copy;
}

void Optimizer::load_state_dict(const OptimizerStateDict& state_dict) {
  NoGradGuard no_grad;
  const std::string where = detail::concat(name(), " load_state_dict");
  MINIDL_CHECK(state_dict.param_groups.size() == groups_.size(), where, ": the state has ",
               state_dict.param_groups.size(), " param groups, this optimizer has ",
               groups_.size());

  // Options and the position -> parameter map, group by group (PyTorch's matching).
  std::vector<std::unique_ptr<OptimizerOptions>> options;
  std::unordered_map<int64_t, Tensor> param_at;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const OptimizerStateDict::ParamGroup& saved = state_dict.param_groups[g];
    const std::vector<Tensor>& params = groups_[g].params();
    MINIDL_CHECK(saved.params.size() == params.size(), where, ": param group ", g, " of the ",
                 "state holds ", saved.params.size(), " parameters, this optimizer's holds ",
                 params.size());
    for (size_t i = 0; i < params.size(); ++i)
      MINIDL_CHECK(param_at.emplace(saved.params[i], params[i]).second, where,
                   ": parameter position ", saved.params[i], " is listed more than once");
    // The names must match; the values are taken as saved and checked by the next step(), as
    // they may be legitimately out of range here: a OneCycleLR that has run to its last step
    // leaves the lr just below zero, as PyTorch's does.
    options.push_back(groups_[g].options().clone());
    options.back()->load_scalars(saved.options, detail::concat(where, ": param group ", g));
  }

  // State tensors, copied onto their parameter's device, dtype and layout.
  std::unordered_map<const TensorImpl*, ParamState> state;
  for (const auto& [position, saved_state] : state_dict.state) {
    const auto found = param_at.find(position);
    MINIDL_CHECK(found != param_at.end(), where, ": the state has an entry for parameter ",
                 "position ", position, ", which no param group lists");
    const Tensor& param = found->second;
    ParamState& loaded = state[param.unsafe_impl()];
    for (const auto& [key, value] : saved_state) {
      const std::string entry_where = detail::concat(where, ": state.", position, ".", key);
      MINIDL_CHECK(value.defined(), entry_where, " is undefined");
      check_state_entry(param, key, value, entry_where);
      loaded.emplace(key, make_loaded_state(param, key, value));
    }
  }

  for (size_t g = 0; g < groups_.size(); ++g) groups_[g].set_options(std::move(options[g]));
  state_ = std::move(state);
}

}  // namespace minidl::optim
