#include "minidl/optim/multi_tensor_optimizer.h"

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/cuda/build.h"
#include "minidl/core/cuda/graph.h"
#include "minidl/core/dispatch.h"
#include "minidl/core/error.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/captured_device_table.h"
#include "minidl/ops/dense_layout.h"
#include "minidl/ops/multi_tensor_table.h"
#include "minidl/optim/multi_tensor_kernels.h"
#include "minidl/optim/optimizer_math.h"

namespace minidl::optim {

namespace {

// The table key of the CPU (CUDA devices are keyed by their index).
constexpr int kCpuTableKey = -1;

// `tensor` (of param's shape) laid out as `param`: itself when the strides agree, else a copy.
Tensor in_layout_of(const Tensor& param, const Tensor& tensor) {
  if (tensor.strides() == param.strides()) return tensor;
  Tensor copy = empty_strided(param.sizes(), param.strides(), tensor.options());
  copy.copy_(tensor);
  return copy;
}

// A state tensor of `param` as `init` says it starts (kFilled with `fill_value`).
Tensor make_state(const Tensor& param, StateInit init, bool flag_on_device, double fill_value) {
  switch (init) {
    case StateInit::kStepCount: return zeros({}, TensorOptions(kFloat32).device(param.device()));
    case StateInit::kZeros: {
      Tensor state = empty_strided(param.sizes(), param.strides(), param.options());
      state.zero_();
      return state;
    }
    case StateInit::kWrittenByFirstStep: {
      Tensor state = empty_strided(param.sizes(), param.strides(), param.options());
      if (flag_on_device) state.zero_();
      return state;
    }
    case StateInit::kFilled: {
      Tensor state = empty_strided(param.sizes(), param.strides(), param.options());
      state.fill_(fill_value);
      return state;
    }
  }
  MINIDL_INTERNAL_ASSERT(false, "unknown StateInit");
  return Tensor();
}

bool has_state(const ParamState* state, const char* key) {
  if (state == nullptr) return false;
  const auto found = state->find(key);
  return found != state->end() && found->second.defined();
}

// One parameter's update, checked before any parameter changes.
struct PendingUpdate {
  Tensor param;
  Tensor grad;  // in the parameter's layout
  size_t group = 0;
  uint32_t state_mask = 0;
};

// The parameters of one (device, dtype): one table.
struct TableBatch {
  std::vector<TensorListEntry> tensors;
  std::vector<Tensor> gradients_in_use;  // keeps re-laid-out gradients alive until the launch
};

}  // namespace

MultiTensorOptimizer::MultiTensorOptimizer(std::unique_ptr<OptimizerOptions> defaults)
    : Optimizer(std::move(defaults)), alive_(std::make_shared<MultiTensorOptimizer*>(this)) {}

MultiTensorOptimizer::~MultiTensorOptimizer() = default;

void MultiTensorOptimizer::add_initial_groups(const std::vector<OptimizerParamGroup>& groups) {
  check_options(defaults(), detail::concat(name(), ": default options"));
  size_t num_params = 0;
  for (const OptimizerParamGroup& group : groups) num_params += group.params().size();
  MINIDL_CHECK(num_params > 0, name(), ": got an empty parameter list; expected at least one ",
               "parameter (e.g. model->parameters())");
  for (const OptimizerParamGroup& group : groups) add_param_group(group);
}

const StateList* MultiTensorOptimizer::find_state_list(const std::string& key) const {
  for (const StateList& list : state_lists())
    if (key == list.key) return &list;
  return nullptr;
}

int MultiTensorOptimizer::step_count_list() const {
  const std::vector<StateList>& lists = state_lists();
  for (size_t k = 0; k < lists.size(); ++k)
    if (lists[k].init == StateInit::kStepCount) return kFirstStateList + static_cast<int>(k);
  return -1;
}

void MultiTensorOptimizer::check_state_entry(const Tensor& param, const std::string& key,
                                             const Tensor& value, const std::string& where) const {
  const StateList* list = find_state_list(key);
  if (list == nullptr) {
    std::string keys;
    for (const StateList& known : state_lists())
      keys += detail::concat(keys.empty() ? "" : ", ", "'", known.key, "'");
    MINIDL_CHECK(false, where, ": unexpected state '", key, "'; ", name(), " keeps only ", keys);
  }
  if (list->init == StateInit::kStepCount)
    MINIDL_CHECK(value.numel() == 1 && value.is_floating_point(), where,
                 ": expected a one-element floating-point ", list->description, ", got ",
                 value.dtype(), " of shape ", value.sizes());
  else
    MINIDL_CHECK(value.sizes() == param.sizes() && value.is_floating_point(), where,
                 ": expected a floating-point ", list->description, " of shape ", param.sizes(),
                 " (the parameter's), got ", value.dtype(), " of shape ", value.sizes());
}

Tensor MultiTensorOptimizer::make_loaded_state(const Tensor& param, const std::string& key,
                                               const Tensor& value) const {
  const StateList* list = find_state_list(key);
  if (list == nullptr || list->init != StateInit::kStepCount)
    return Optimizer::make_loaded_state(param, key, value);
  // The kernels read a 0-dim float32 on the parameter's device, as PyTorch's fused steps do.
  Tensor count = empty({}, TensorOptions(kFloat32).device(param.device()));
  count.copy_(value.reshape({}));
  return count;
}

void MultiTensorOptimizer::step() { run_step(Tensor()); }

double MultiTensorOptimizer::state_fill_value(const OptimizerOptions& /*group_options*/) const {
  MINIDL_INTERNAL_ASSERT(false, name(), " keeps a kFilled state but gives no state_fill_value");
  return 0.0;
}

void MultiTensorOptimizer::step_unless_found_inf(const Tensor& found_inf) {
  MINIDL_CHECK(found_inf.defined() && found_inf.numel() == 1 && found_inf.dtype() == kFloat32,
               name(), " step_unless_found_inf: expected a one-element float32 found_inf flag");
  // On the CPU reading the flag costs nothing, and skipping here skips exactly.
  if (found_inf.is_cpu()) {
    if (*found_inf.data_ptr<float>() == 0.0f) run_step(Tensor());
    return;
  }
  run_step(found_inf);
}

void MultiTensorOptimizer::run_step(const Tensor& found_inf) {
  const ProfileScope profile("optimizer step");
  NoGradGuard no_grad;
  const bool flag_on_device = found_inf.defined() && found_inf.is_cuda();
  const std::vector<StateList>& lists = state_lists();
  MINIDL_INTERNAL_ASSERT(lists.size() <= static_cast<size_t>(kMaxStateLists), name(), " keeps ",
                         lists.size(), " state tensors per parameter; a table holds at most ",
                         kMaxStateLists);

  // Pass 1: check everything, so a bad parameter fails the step before anything changes.
  std::vector<std::byte> group_records;
  std::vector<PendingUpdate> pending;
  for (size_t g = 0; g < param_groups().size(); ++g) {
    const std::string where = detail::concat(name(), " step: param group ", g);
    const OptimizerOptions& options = param_groups()[g].options();
    check_options(options, where);
    append_group_record(options, group_records);
    const uint32_t mask = state_mask(options);
    const std::vector<Tensor>& params = param_groups()[g].params();
    for (size_t i = 0; i < params.size(); ++i) {
      const Tensor& param = params[i];
      const Tensor grad = param.grad();
      if (!grad.defined() || param.numel() == 0) continue;
      MINIDL_CHECK(param.is_floating_point(), where, ", parameter ", i, ": expected a ",
                   "floating-point parameter, got ", param.dtype());
      MINIDL_CHECK(!(param.is_cuda() && param.dtype() == kFloat64), where, ", parameter ", i,
                   ": float64 parameters are supported on the CPU only");
      MINIDL_CHECK(is_non_overlapping_and_dense(param), where, ", parameter ", i, " of shape ",
                   param.sizes(), " has strides ", param.strides(),
                   "; expected a dense parameter (its elements filling its memory without gaps)");
      MINIDL_CHECK(grad.dtype() == param.dtype() && grad.sizes() == param.sizes() &&
                       grad.device() == param.device(),
                   where, ", parameter ", i, ": expected a gradient of the parameter's dtype, ",
                   "shape and device (", param.dtype(), ", ", param.sizes(), ", ", param.device(),
                   "), got ", grad.dtype(), ", ", grad.sizes(), ", ", grad.device());
      MINIDL_CHECK(!flag_on_device || !param.is_cuda() || found_inf.device() == param.device(),
                   where, ", parameter ", i, ": the found_inf flag is on ", found_inf.device(),
                   " but this parameter of shape ", param.sizes(), " is on ", param.device(),
                   "; expected one device");
      // State made inside a captured step would be re-initialised at every replay. Asked only
      // while some state is missing (the first step), so eager steps make no driver call.
      if (param.is_cuda()) {
        const ParamState* param_state = state(param);
        for (size_t k = 0; k < lists.size(); ++k) {
          if ((mask >> k & 1u) == 0 || has_state(param_state, lists[k].key)) continue;
          MINIDL_CHECK(!cuda::is_capturing(cuda::current_stream(param.device().index)), where,
                       ", parameter ", i, " (shape ", param.sizes(), ") has no ",
                       lists[k].description, " yet, and a CUDA graph is being captured; run ",
                       "one step eagerly before capturing (Note [What a captured step may do] ",
                       "in core/cuda/graph.h)");
          break;
        }
      }
      pending.push_back({param, in_layout_of(param, grad), g, mask});
    }
  }

  // Pass 2: state and table entries, one table per (device, dtype).
  int cpu_skip = -1;  // CPU parameters beside a CUDA flag wait for it: -1 not read yet, 0, 1
  std::map<std::pair<int, DType>, TableBatch> batches;
  for (PendingUpdate& update : pending) {
    const Tensor& param = update.param;
    if (param.is_cpu() && flag_on_device) {
      if (cpu_skip < 0) cpu_skip = found_inf.item<float>() != 0.0f ? 1 : 0;
      if (cpu_skip == 1) continue;
    }
    TensorListEntry entry;
    entry.data[kParamList] = param.data_ptr();
    entry.data[kGradList] = update.grad.data_ptr();
    entry.numel = param.numel();
    entry.group = static_cast<int32_t>(update.group);
    if (update.state_mask != 0) {
      ParamState& param_state = mutable_state(param);
      for (size_t k = 0; k < lists.size(); ++k) {
        if ((update.state_mask >> k & 1u) == 0) continue;
        const int list = kFirstStateList + static_cast<int>(k);
        Tensor& slot = param_state[lists[k].key];
        if (!slot.defined()) {
          slot = make_state(param, lists[k].init, flag_on_device,
                            lists[k].init == StateInit::kFilled
                                ? state_fill_value(param_groups()[update.group].options())
                                : 0.0);
          entry.flags |= int32_t{1} << list;
        } else if (lists[k].init != StateInit::kStepCount) {
          slot = in_layout_of(param, slot);
        }
        entry.data[list] = slot.data_ptr();
        slot.bump_version();
      }
    }
    const int device_key = param.is_cuda() ? param.device().index : kCpuTableKey;
    TableBatch& batch = batches[{device_key, param.dtype()}];
    batch.tensors.push_back(entry);
    batch.gradients_in_use.push_back(update.grad);
    param.bump_version();
  }

  // Pass 3: per table, the step counts, then the update. No kernel launch waits for the device.
  const int step_list = step_count_list();
  for (auto& [key, batch] : batches) {
    const auto& [device_key, dtype] = key;
    std::unique_ptr<MultiTensorTable>& table = tables_[key];
    if (!table) table = std::make_unique<MultiTensorTable>();
    table->build(group_records.data(), group_records.size(), batch.tensors);
    MultiTensorArgs args;
    args.layout = table->layout();
    args.dtype = dtype;
    Device device(kCPU);
    if (device_key == kCpuTableKey) {
      args.table = table->image().data();
    } else if constexpr (cuda::kBuilt) {
      device = Device(kCUDA, device_key);
      cuda::CudaGraph* graph = cuda::capturing_graph(cuda::current_stream(device_key));
      const void* device_table = graph != nullptr
                                     ? captured_device_table(*graph, *table, device_key)
                                     : table->device_table(device);
      args.table = static_cast<const std::byte*>(device_table);
      args.device_index = device_key;
      args.skip_flag = flag_on_device ? found_inf.data_ptr<float>() : nullptr;
    } else {
      MINIDL_INTERNAL_ASSERT(false, "CUDA parameters in a build without CUDA");
    }
    if (step_list >= 0) {
      kernels_for<StepCountKernels>(device).increment(args, step_list);
      if (device.is_cuda()) ++kernel_launches_;
    }
    update(device, args);
    if (device.is_cuda()) ++kernel_launches_;
  }
}

const void* MultiTensorOptimizer::captured_device_table(cuda::CudaGraph& graph,
                                                        const MultiTensorTable& table,
                                                        int device_index) {
  // Note [Multi-tensor steps under CUDA graph capture]: the graph gets a table of its own, in
  // its private pool; the eager table (and its upload cache) stays as it was, so an eager step
  // between replays cannot overwrite what the graph reads. The image's tensors and chunks never
  // change for this graph (their addresses are the graph's); its groups section is rewritten
  // from the optimizer's current options before each replay and uploaded when it changed, so
  // the learning rate a scheduler sets lives on the device. The step counts are device tensors
  // incremented by a captured kernel that reads the found_inf flag, so each replay counts one
  // step (a skipped one none) and the bias corrections read them on the device, as in eager
  // steps. Which state tensors a parameter has is fixed by the capture: a replay whose options
  // would keep other state fails (check_unchanged_since_capture).
  auto captured = std::make_shared<CapturedDeviceTable>(table.image(), Device(kCUDA, device_index));
  auto options_at_capture = std::make_shared<std::vector<std::unique_ptr<OptimizerOptions>>>();
  for (const OptimizerParamGroup& group : param_groups())
    options_at_capture->push_back(group.options().clone());
  const uint64_t groups_offset = table.layout().groups_offset;
  graph.add_replay_hook([captured, options_at_capture, groups_offset,
                         owner = std::weak_ptr<MultiTensorOptimizer*>(alive_)] {
    // A destroyed optimizer's options can no longer change: the last records stay.
    if (const std::shared_ptr<MultiTensorOptimizer*> optimizer = owner.lock()) {
      const std::vector<std::byte> records =
          (*optimizer)->group_records_for_replay(*options_at_capture);
      captured->write(groups_offset, records.data(), records.size());
    }
    captured->upload_changes();
  });
  return captured->device_data();
}

std::vector<std::byte> MultiTensorOptimizer::group_records_for_replay(
    const std::vector<std::unique_ptr<OptimizerOptions>>& options_at_capture) const {
  MINIDL_CHECK(param_groups().size() == options_at_capture.size(), name(), ": ",
               param_groups().size(), " param groups before this CUDA graph replay, but ",
               options_at_capture.size(), " when its step was captured; capture the step again ",
               "after add_param_group");
  std::vector<std::byte> records;
  for (size_t g = 0; g < param_groups().size(); ++g) {
    const std::string where = detail::concat(name(), " replay of a captured step: param group ", g);
    const OptimizerOptions& options = param_groups()[g].options();
    check_options(options, where);
    check_unchanged_since_capture(*options_at_capture[g], options, where);
    append_group_record(options, records);
  }
  return records;
}

MultiTensorOptimizer::FusedStats MultiTensorOptimizer::fused_stats() const {
  FusedStats stats;
  stats.kernel_launches = kernel_launches_;
  for (const auto& [key, table] : tables_) stats.table_uploads += table->uploads();
  return stats;
}

}  // namespace minidl::optim
