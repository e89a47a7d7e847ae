#include "minidl/distributed/zero_redundancy_optimizer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <unordered_map>
#include <utility>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/error.h"
#include "minidl/distributed/init.h"
#include "minidl/nn/utils/clip_grad.h"
#include "minidl/ops/elementwise.h"
#include "minidl/optim/multi_tensor_optimizer.h"

namespace minidl::distributed {

struct ZeroRedundancyOptimizer::Parts {
  std::shared_ptr<ProcessGroup> group;
  ZeroSharding sharding = ZeroSharding::WholeParameters;
  std::vector<optim::OptimizerParamGroup> groups;  // every parameter, with the resolved options
  std::unique_ptr<optim::Optimizer> local;
  std::vector<int> owners;
};

const char* zero_sharding_name(ZeroSharding sharding) {
  switch (sharding) {
    case ZeroSharding::WholeParameters: return "whole parameters";
    case ZeroSharding::ReduceScatter: return "reduce-scatter";
  }
  return "unknown";
}

namespace {

// Note [ZeRO's reduce-scatter form]: slices of flat buckets are stepped as the parameters would
// be only by an optimizer whose update is elementwise, which every MultiTensorOptimizer's is (one
// element functor, optim/multi_tensor_optimizer.h).
void check_elementwise(const optim::Optimizer& optimizer) {
  MINIDL_CHECK(dynamic_cast<const optim::MultiTensorOptimizer*>(&optimizer) != nullptr,
               "ZeroRedundancyOptimizer: the reduce-scatter form steps flat slices of the ",
               "parameters, which gives the unsharded result only for an elementwise optimizer ",
               "(SGD, Adam, AdamW, RMSprop, Adagrad: an optim::MultiTensorOptimizer); the wrapped ",
               "optimizer is not one. Use ZeroSharding::WholeParameters for it");
}

// Note [ZeRO shards whole parameters]: largest first, each to the rank with the fewest bytes.
// Every rank computes the same partition from the same shapes.
std::vector<int> partition_parameters(const std::vector<Tensor>& params, int world_size) {
  std::vector<size_t> order(params.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&params](size_t a, size_t b) {
    return params[a].nbytes() > params[b].nbytes();
  });
  std::vector<size_t> load(static_cast<size_t>(world_size), 0);
  std::vector<int> owners(params.size(), 0);
  for (size_t position : order) {
    const auto lightest = std::min_element(load.begin(), load.end());
    owners[position] = static_cast<int>(lightest - load.begin());
    *lightest += params[position].nbytes();
  }
  return owners;
}

// Tensors of `entries` as one i64 list, so that one broadcast carries a shard's layout:
// per entry: position, key length, the key's characters, dtype, number of dims, sizes.
struct StateEntry {
  int64_t position = 0;
  std::string key;
  Tensor value;
};

std::vector<int64_t> describe_entries(const std::vector<StateEntry>& entries) {
  std::vector<int64_t> layout{static_cast<int64_t>(entries.size())};
  for (const StateEntry& entry : entries) {
    layout.push_back(entry.position);
    layout.push_back(static_cast<int64_t>(entry.key.size()));
    for (char c : entry.key) layout.push_back(static_cast<unsigned char>(c));
    layout.push_back(static_cast<int64_t>(entry.value.dtype()));
    layout.push_back(static_cast<int64_t>(entry.value.sizes().size()));
    for (int64_t size : entry.value.sizes()) layout.push_back(size);
  }
  return layout;
}

// The inverse of describe_entries, with empty tensors of the described dtype and shape on
// `device` to receive the values.
std::vector<StateEntry> entries_from_layout(const std::vector<int64_t>& layout, Device device) {
  std::vector<StateEntry> entries(static_cast<size_t>(layout.at(0)));
  size_t at = 1;
  for (StateEntry& entry : entries) {
    entry.position = layout.at(at++);
    const auto key_length = static_cast<size_t>(layout.at(at++));
    for (size_t i = 0; i < key_length; ++i) entry.key.push_back(static_cast<char>(layout.at(at++)));
    const auto dtype = static_cast<DType>(layout.at(at++));
    Shape sizes(static_cast<size_t>(layout.at(at++)));
    for (int64_t& size : sizes) size = layout.at(at++);
    entry.value = empty(sizes, TensorOptions(dtype).device(device));
  }
  return entries;
}

}  // namespace

ZeroRedundancyOptimizer::Parts ZeroRedundancyOptimizer::make_parts(
    std::vector<optim::OptimizerParamGroup> groups, const OptimizerFactory& make_optimizer,
    const ZeroRedundancyOptimizerOptions& options) {
  MINIDL_CHECK(make_optimizer != nullptr,
               "ZeroRedundancyOptimizer: expected a function that makes the wrapped optimizer, "
               "found an empty one");
  Parts parts;
  std::vector<Tensor> all;
  for (const optim::OptimizerParamGroup& group : groups)
    all.insert(all.end(), group.params().begin(), group.params().end());
  for (size_t i = 0; i < all.size(); ++i)
    MINIDL_CHECK(all[i].defined(), "ZeroRedundancyOptimizer: parameter ", i, " is undefined");
  parts.group = options.process_group();
  if (!parts.group)
    parts.group = default_process_group(all.empty() ? Device(kCPU) : all.front().device());
  parts.sharding = options.sharding();
  // The reduce-scatter form's wrapped optimizer holds every parameter until attach() gives it
  // the slices instead (it makes no state before a step, which attach() must precede).
  const bool slices_later =
      parts.sharding == ZeroSharding::ReduceScatter && parts.group->size() > 1;
  if (!slices_later) parts.owners = partition_parameters(all, parts.group->size());

  // This rank's share of each group, keeping the group's own options.
  std::vector<optim::OptimizerParamGroup> local_groups;
  size_t position = 0;
  for (const optim::OptimizerParamGroup& group : groups) {
    std::vector<Tensor> mine;
    for (const Tensor& param : group.params())
      if (slices_later || parts.owners[position++] == parts.group->rank()) mine.push_back(param);
    local_groups.push_back(group.has_options()
                               ? optim::OptimizerParamGroup(std::move(mine), group.options())
                               : optim::OptimizerParamGroup(std::move(mine)));
  }
  parts.local = make_optimizer(std::move(local_groups));
  MINIDL_CHECK(parts.local != nullptr,
               "ZeroRedundancyOptimizer: the function that makes the wrapped optimizer returned "
               "null");
  MINIDL_CHECK(parts.local->param_groups().size() == groups.size(),
               "ZeroRedundancyOptimizer: the wrapped optimizer has ",
               parts.local->param_groups().size(), " param groups, expected the ", groups.size(),
               " it was given");
  if (slices_later) check_elementwise(*parts.local);
  // The groups of this optimizer: every parameter, with the options the wrapped one resolved.
  for (size_t g = 0; g < groups.size(); ++g)
    parts.groups.emplace_back(groups[g].params(), parts.local->param_groups()[g].options());
  return parts;
}

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(Parts parts)
    : Optimizer(parts.local->defaults().clone()),
      group_(std::move(parts.group)),
      sharding_(parts.sharding),
      local_(std::move(parts.local)),
      owners_(std::move(parts.owners)) {
  for (const optim::OptimizerParamGroup& group : parts.groups) add_param_group(group);
}

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(std::vector<optim::OptimizerParamGroup> groups,
                                                 const OptimizerFactory& make_optimizer,
                                                 ZeroRedundancyOptimizerOptions options)
    : ZeroRedundancyOptimizer(make_parts(std::move(groups), make_optimizer, options)) {}

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(std::vector<Tensor> params,
                                                 const OptimizerFactory& make_optimizer,
                                                 ZeroRedundancyOptimizerOptions options)
    : ZeroRedundancyOptimizer(
          std::vector<optim::OptimizerParamGroup>{optim::OptimizerParamGroup(std::move(params))},
          make_optimizer, std::move(options)) {}

void ZeroRedundancyOptimizer::attach(DistributedDataParallel& ddp) {
  if (!steps_slices()) return;
  MINIDL_CHECK(slices_ == nullptr, "ZeroRedundancyOptimizer attach: already attached; expected ",
               "one attach(ddp) per optimizer");
  MINIDL_CHECK(ddp.process_group() == group_, "ZeroRedundancyOptimizer attach: the DDP wrapper ",
               "averages over another process group than this optimizer shards over (",
               ddp.process_group()->backend_name(), " of ", ddp.process_group()->size(),
               " ranks, this one ", group_->backend_name(), " of ", group_->size(),
               "); expected the same group");
  std::vector<std::vector<Tensor>> groups;
  for (const optim::OptimizerParamGroup& group : param_groups()) groups.push_back(group.params());
  const GradientReducer* reducer = ddp.reduce_scatter_gradients(groups);
  MINIDL_INTERNAL_ASSERT(reducer != nullptr, "a DDP wrapper of world size > 1 has a reducer");
  slices_ = std::make_unique<ZeroFlatShards>(*reducer, parameters(), group_);
  // The wrapped optimizer steps the slices from now on. It has no state yet (step() and
  // load_state_dict() need attach() first), so its groups can change their tensors; the factory
  // is not called again, as it may refer to what has gone since the constructor.
  std::vector<std::vector<Tensor>> by_group = slices_->slices_by_group(param_groups().size());
  for (size_t g = 0; g < by_group.size(); ++g)
    local_->param_groups()[g].params() = std::move(by_group[g]);
  forget_consolidated_state();
}

void ZeroRedundancyOptimizer::check_attached(const char* what) const {
  MINIDL_CHECK(!steps_slices() || slices_ != nullptr, "ZeroRedundancyOptimizer ", what,
               ": the reduce-scatter form takes its gradients from the DDP wrapper's buckets; ",
               "expected optimizer.attach(ddp) first, on every rank");
}

void ZeroRedundancyOptimizer::copy_options_to_local_optimizer() {
  const size_t expected = local_->param_groups().size();
  MINIDL_CHECK(param_groups().size() == expected, "ZeroRedundancyOptimizer: it has ",
               param_groups().size(), " param groups, its wrapped optimizer ", expected,
               "; param groups cannot be added after construction");
  for (size_t g = 0; g < expected; ++g)
    local_->param_groups()[g].set_options(param_groups()[g].options().clone());
}

void ZeroRedundancyOptimizer::broadcast_parameters() {
  if (group_->size() == 1) return;
  NoGradGuard no_grad;
  // One broadcast per parameter, all queued before any is waited for. A parameter that is not
  // contiguous (channels_last) travels through a contiguous copy.
  std::vector<std::shared_ptr<Work>> works;
  std::vector<std::pair<Tensor, Tensor>> copied_back;  // (parameter, contiguous copy)
  size_t position = 0;
  for (const optim::OptimizerParamGroup& group : param_groups()) {
    for (const Tensor& param : group.params()) {
      const int owner = owners_[position++];
      Tensor wire = param.is_contiguous() ? param : param.contiguous();
      works.push_back(group_->broadcast_async(wire, owner));
      if (!param.is_contiguous()) copied_back.emplace_back(param, wire);
    }
  }
  for (const std::shared_ptr<Work>& work : works) work->wait();
  for (auto& [param, wire] : copied_back) param.copy_(wire);
  // The broadcast wrote the parameters behind autograd's back: bump their versions, as an
  // optimizer step does, so a graph that saved them notices.
  for (const optim::OptimizerParamGroup& group : param_groups())
    for (const Tensor& param : group.params()) param.bump_version();
}

void ZeroRedundancyOptimizer::step() {
  check_attached("step");
  copy_options_to_local_optimizer();
  forget_consolidated_state();
  if (steps_slices()) {
    slices_->take_gradients("ZeroRedundancyOptimizer step");
    slices_->copy_parameters_into_slices();
    local_->step();
    slices_->all_gather_parameters();
    return;
  }
  local_->step();
  broadcast_parameters();
}

void ZeroRedundancyOptimizer::step_unless_found_inf(const Tensor& found_inf) {
  check_attached("step");
  copy_options_to_local_optimizer();
  forget_consolidated_state();
  if (group_->size() > 1) group_->all_reduce(found_inf, ReduceOp::Max);
  if (steps_slices()) {
    slices_->take_gradients("ZeroRedundancyOptimizer step");
    slices_->copy_parameters_into_slices();
    local_->step_unless_found_inf(found_inf);
    // A skipped step changed no slice: the all-gather writes back what every rank has.
    slices_->all_gather_parameters();
    return;
  }
  local_->step_unless_found_inf(found_inf);
  // A skipped step changed nothing, so the broadcast sends what every rank has; on CUDA the
  // flag stays on the device and the broadcast goes ahead either way.
  broadcast_parameters();
}

Tensor ZeroRedundancyOptimizer::clip_grad_norm_(double max_norm) {
  if (!steps_slices()) return nn::utils::clip_grad_norm_(parameters(), max_norm);
  check_attached("clip_grad_norm_");
  MINIDL_CHECK(std::isfinite(max_norm) && max_norm >= 0, "ZeroRedundancyOptimizer ",
               "clip_grad_norm_: expected a finite max_norm >= 0, got ", max_norm);
  NoGradGuard no_grad;
  Tensor squared = slices_->local_squared_gradient_norm();
  group_->all_reduce(squared, ReduceOp::Sum);
  const Tensor norm = squared.sqrt();
  // As nn::utils::clip_grad_norm_: on the device, without a host decision.
  const Tensor coefficient = clamp_max(Scalar(max_norm) / (norm + 1e-6), 1.0);
  for (const Tensor& slice : slices_->local_order()) {
    Tensor grad = slice.grad();
    grad.mul_(grad.dtype() == kFloat32 ? coefficient : coefficient.to(grad.dtype()));
  }
  return norm;
}

std::vector<Tensor> ZeroRedundancyOptimizer::stepped_tensors() const {
  return slices_ ? slices_->local_order() : parameters();
}

size_t ZeroRedundancyOptimizer::local_state_bytes() const {
  size_t bytes = 0;
  for (const Tensor& param : local_->parameters())
    if (const optim::ParamState* state = local_->state(param))
      for (const auto& entry : *state) bytes += entry.second.nbytes();
  return bytes;
}

void ZeroRedundancyOptimizer::consolidate_state_dict(int to) {
  MINIDL_CHECK(to >= 0 && to < group_->size(),
               "ZeroRedundancyOptimizer::consolidate_state_dict: ", "expected a rank in [0, ",
               group_->size(), "), found ", to);
  check_attached("consolidate_state_dict");
  NoGradGuard no_grad;
  const std::vector<Tensor> params = parameters();
  optim::OptimizerStateDict whole;
  if (steps_slices()) {
    whole.state = slices_->whole_state(local_->state_dict().state);
  } else {
    whole.state = gather_whole_parameter_state(params);
  }
  int64_t position = 0;
  for (const optim::OptimizerParamGroup& group : param_groups()) {
    optim::OptimizerStateDict::ParamGroup saved;
    saved.options = group.options().to_scalars();
    for (size_t i = 0; i < group.params().size(); ++i) saved.params.push_back(position++);
    whole.param_groups.push_back(std::move(saved));
  }
  if (group_->rank() == to)
    consolidated_ = std::move(whole);
  else
    consolidated_.reset();
}

std::map<int64_t, optim::ParamState> ZeroRedundancyOptimizer::gather_whole_parameter_state(
    const std::vector<Tensor>& params) {
  // The local optimizer's positions, in its own order, map to this optimizer's.
  std::vector<int64_t> global_position;
  for (size_t position = 0; position < owners_.size(); ++position)
    if (owners_[position] == group_->rank())
      global_position.push_back(static_cast<int64_t>(position));
  const optim::OptimizerStateDict local_state = local_->state_dict();
  std::vector<StateEntry> mine;
  for (const auto& [local_position, param_state] : local_state.state)
    for (const auto& [key, value] : param_state)
      mine.push_back(
          {global_position.at(static_cast<size_t>(local_position)), key, value.contiguous()});

  const Device device = params.empty() ? Device(kCPU) : params.front().device();
  std::map<int64_t, optim::ParamState> whole;
  for (int owner = 0; owner < group_->size(); ++owner) {
    std::vector<StateEntry> entries;
    if (group_->size() == 1) {
      entries = mine;
    } else {
      // The layout's length, the layout, then the tensors, each broadcast from the owner.
      const bool sending = owner == group_->rank();
      const std::vector<int64_t> layout = sending ? describe_entries(mine) : std::vector<int64_t>{};
      Tensor length = tensor(std::vector<int64_t>{static_cast<int64_t>(layout.size())}).to(device);
      group_->broadcast(length, owner);
      Tensor wire = sending ? tensor(layout).to(device)
                            : empty({to_vector<int64_t>(length.to(Device(kCPU)))[0]},
                                    TensorOptions(kInt64).device(device));
      group_->broadcast(wire, owner);
      entries =
          sending ? mine : entries_from_layout(to_vector<int64_t>(wire.to(Device(kCPU))), device);
      std::vector<std::shared_ptr<Work>> works;
      for (StateEntry& entry : entries)
        if (entry.value.numel() > 0) works.push_back(group_->broadcast_async(entry.value, owner));
      for (const std::shared_ptr<Work>& work : works) work->wait();
    }
    for (StateEntry& entry : entries)
      whole[entry.position].emplace(entry.key, std::move(entry.value));
  }
  return whole;
}

optim::OptimizerStateDict ZeroRedundancyOptimizer::state_dict() const {
  MINIDL_CHECK(consolidated_.has_value(), "ZeroRedundancyOptimizer::state_dict on rank ",
               group_->rank(), ": expected a whole state gathered by consolidate_state_dict() ",
               "(collective) since the last step, found none; call consolidate_state_dict(",
               group_->rank(), ") on every rank first");
  return *consolidated_;
}

void ZeroRedundancyOptimizer::check_state_entry(const Tensor& /*param*/, const std::string& /*key*/,
                                                const Tensor& /*value*/,
                                                const std::string& /*where*/) const {
  // load_state_dict below hands every entry to the local optimizer, which checks it.
}

void ZeroRedundancyOptimizer::load_state_dict(const optim::OptimizerStateDict& state_dict) {
  const std::string where = "ZeroRedundancyOptimizer load_state_dict";
  check_attached("load_state_dict");
  MINIDL_CHECK(state_dict.param_groups.size() == param_groups().size(), where, ": the state has ",
               state_dict.param_groups.size(), " param groups, this optimizer has ",
               param_groups().size());
  // The state's positions, group by group, to this optimizer's positions (PyTorch's matching by
  // order), and those this rank owns to the local optimizer's positions.
  std::unordered_map<int64_t, int64_t> position_of;
  int64_t position = 0;
  for (size_t g = 0; g < param_groups().size(); ++g) {
    const std::vector<int64_t>& saved = state_dict.param_groups[g].params;
    MINIDL_CHECK(saved.size() == param_groups()[g].params().size(), where, ": param group ", g,
                 " of the state holds ", saved.size(), " parameters, this optimizer's holds ",
                 param_groups()[g].params().size());
    for (int64_t saved_position : saved)
      MINIDL_CHECK(position_of.emplace(saved_position, position++).second, where,
                   ": parameter position ", saved_position, " is listed more than once");
  }
  std::map<int64_t, optim::ParamState> by_position;
  for (const auto& [saved_position, param_state] : state_dict.state) {
    const auto found = position_of.find(saved_position);
    MINIDL_CHECK(found != position_of.end(), where, ": the state has an entry for parameter ",
                 "position ", saved_position, ", which no param group lists");
    by_position.emplace(found->second, param_state);
  }

  optim::OptimizerStateDict local_state;
  std::vector<int64_t> local_position(owners_.size(), -1);  // whole-parameter form
  int64_t next_local = 0;
  if (steps_slices()) {
    local_state.state = slices_->local_state(by_position, where);
  } else {
    for (size_t p = 0; p < owners_.size(); ++p)
      if (owners_[p] == group_->rank()) local_position[p] = next_local++;
    for (auto& [mine, param_state] : by_position)
      if (local_position[static_cast<size_t>(mine)] >= 0)
        local_state.state.emplace(local_position[static_cast<size_t>(mine)], param_state);
  }
  next_local = 0;
  std::vector<std::unique_ptr<optim::OptimizerOptions>> options;
  position = 0;
  for (size_t g = 0; g < param_groups().size(); ++g) {
    optim::OptimizerStateDict::ParamGroup local_group;
    local_group.options = state_dict.param_groups[g].options;
    if (steps_slices()) {  // the slices of the group's buckets, in the local optimizer's order
      for (size_t i = 0; i < local_->param_groups()[g].params().size(); ++i)
        local_group.params.push_back(next_local++);
    } else {
      for (size_t i = 0; i < param_groups()[g].params().size(); ++i, ++position)
        if (local_position[static_cast<size_t>(position)] >= 0)
          local_group.params.push_back(next_local++);
    }
    local_state.param_groups.push_back(std::move(local_group));
    options.push_back(param_groups()[g].options().clone());
    options.back()->load_scalars(state_dict.param_groups[g].options,
                                 minidl::detail::concat(where, ": param group ", g));
  }
  local_->load_state_dict(local_state);  // checks every entry this rank keeps
  for (size_t g = 0; g < param_groups().size(); ++g)
    param_groups()[g].set_options(std::move(options[g]));
  forget_consolidated_state();
}

}  // namespace minidl::distributed
