#include "minidl/optim/sgd.h"

#include <cmath>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/cuda/build.h"
#include "minidl/core/cuda/graph.h"
#include "minidl/core/error.h"
#include "minidl/ops/dense_layout.h"
#include "minidl/optim/captured_device_table.h"
#include "minidl/optim/cpu/sgd_kernel.h"
#include "minidl/optim/cuda/sgd_kernel.h"
#include "minidl/optim/fused_sgd_table.h"

namespace minidl::optim {

namespace {

constexpr const char* kMomentumBuffer = "momentum_buffer";

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

bool has_momentum_buffer(const ParamState* state) {
  if (state == nullptr) return false;
  const auto found = state->find(kMomentumBuffer);
  return found != state->end() && found->second.defined();
}

// `tensor` (of param's shape) laid out as `param`: itself when the strides agree, else a copy.
Tensor in_layout_of(const Tensor& param, const Tensor& tensor) {
  if (tensor.strides() == param.strides()) return tensor;
  Tensor copy = empty_strided(param.sizes(), param.strides(), tensor.options());
  copy.copy_(tensor);
  return copy;
}

// One parameter's update, checked before any parameter changes.
struct PendingUpdate {
  Tensor param;
  Tensor grad;  // in the parameter's layout
  size_t group = 0;
  bool uses_momentum = false;
};

// The CUDA parameters of one (device, dtype): one fused launch.
struct FusedBatch {
  std::vector<SgdTensorEntry> tensors;
  std::vector<Tensor> gradients_in_use;  // keeps re-laid-out gradients alive until the launch
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
    : Optimizer(defaults.clone()), alive_(std::make_shared<SGD*>(this)) {
  check_options(defaults, "SGD: default options");
  size_t num_params = 0;
  for (const OptimizerParamGroup& group : groups) num_params += group.params().size();
  MINIDL_CHECK(num_params > 0, "SGD: got an empty parameter list; expected at least one ",
               "parameter (e.g. model->parameters())");
  for (const OptimizerParamGroup& group : groups) add_param_group(group);
}

SGD::~SGD() = default;

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

void SGD::check_state_entry(const Tensor& param, const std::string& key, const Tensor& value,
                            const std::string& where) const {
  MINIDL_CHECK(key == kMomentumBuffer, where, ": unexpected state '", key, "'; SGD keeps only '",
               kMomentumBuffer, "'");
  MINIDL_CHECK(value.sizes() == param.sizes() && value.is_floating_point(), where,
               ": expected a floating-point momentum buffer of shape ", param.sizes(),
               " (the parameter's), got ", value.dtype(), " of shape ", value.sizes());
}

void SGD::step() { run_step(Tensor()); }

void SGD::step_unless_found_inf(const Tensor& found_inf) {
  MINIDL_CHECK(found_inf.defined() && found_inf.numel() == 1 && found_inf.dtype() == kFloat32,
               "SGD step_unless_found_inf: expected a one-element float32 found_inf flag");
  // On the CPU reading the flag costs nothing, and skipping here skips exactly.
  if (found_inf.is_cpu()) {
    if (*found_inf.data_ptr<float>() == 0.0f) run_step(Tensor());
    return;
  }
  run_step(found_inf);
}

void SGD::run_step(const Tensor& found_inf) {
  NoGradGuard no_grad;
  const bool flag_on_device = found_inf.defined() && found_inf.is_cuda();

  // Pass 1: check everything, so a bad parameter fails the step before anything changes.
  std::vector<SgdGroupParameters> groups;
  std::vector<PendingUpdate> pending;
  for (size_t g = 0; g < param_groups().size(); ++g) {
    const std::string where = detail::concat("SGD step: param group ", g);
    const SGDOptions& options = as_sgd_options(param_groups()[g].options(), where);
    check_options(options, where);
    groups.push_back(group_parameters(options));
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
                   "; expected a dense parameter (its ",
                   "elements filling its memory without gaps)");
      const bool uses_momentum = options.momentum() != 0;
      // A buffer made inside a captured step would be re-initialised at every replay. Asked
      // only while a buffer is missing (the first step), so eager steps make no driver call.
      if (uses_momentum && param.is_cuda() && !has_momentum_buffer(state(param)))
        MINIDL_CHECK(!cuda::is_capturing(cuda::current_stream(param.device().index)), where,
                     ", parameter ", i, " (shape ", param.sizes(), ") has no momentum buffer ",
                     "yet, and a CUDA graph is being captured; run one step eagerly before ",
                     "capturing (Note [What a captured step may do] in core/cuda/graph.h)");
      pending.push_back({param, in_layout_of(param, grad), g, uses_momentum});
    }
  }

  // Pass 2: CPU parameters now, CUDA parameters gathered into one launch per (device, dtype).
  // No kernel table (Note [Kernel tables] in core/dispatch.h): the backends take differently
  // shaped work, one parameter per CPU call and every parameter of a (device, dtype) per launch.
  std::map<std::pair<int, DType>, FusedBatch> fused_batches;
  for (PendingUpdate& update : pending) {
    const Tensor& param = update.param;
    Tensor buffer;
    MomentumBufferState buffer_state = MomentumBufferState::kNone;
    if (update.uses_momentum) {
      Tensor& slot = mutable_state(param)[kMomentumBuffer];
      if (slot.defined()) {
        slot = in_layout_of(param, slot);
        buffer_state = MomentumBufferState::kUpdate;
      } else {
        // Left uninitialised: the first step writes the gradient into it. Under a device
        // found_inf flag the step may be skipped, so start from zeros (see sgd.h).
        slot = empty_strided(param.sizes(), param.strides(), param.options());
        if (flag_on_device) slot.zero_();
        buffer_state = MomentumBufferState::kInitialize;
      }
      buffer = slot;
    }
    if (param.is_cpu()) {
      // CPU parameters beside a CUDA flag (a mixed-device model) wait for the flag.
      if (flag_on_device && found_inf.item<float>() != 0.0f) continue;
      cpu::sgd_update(param, update.grad, buffer, groups[update.group], buffer_state);
    } else {
      MINIDL_CHECK(!flag_on_device || found_inf.device() == param.device(), "SGD step: the ",
                   "found_inf flag is on ", found_inf.device(), " but a parameter of shape ",
                   param.sizes(), " is on ", param.device(), "; expected one device");
      FusedBatch& batch = fused_batches[{param.device().index, param.dtype()}];
      SgdTensorEntry entry;
      entry.param = param.data_ptr();
      entry.grad = update.grad.data_ptr();
      entry.momentum_buffer = buffer.defined() ? buffer.data_ptr() : nullptr;
      entry.numel = param.numel();
      entry.group = static_cast<int32_t>(update.group);
      entry.buffer_state = buffer_state;
      batch.tensors.push_back(entry);
      batch.gradients_in_use.push_back(update.grad);
    }
    param.bump_version();
    if (buffer.defined()) buffer.bump_version();
  }

  if constexpr (cuda::kBuilt) {
    for (auto& [key, batch] : fused_batches) {
      const auto& [device_index, dtype] = key;
      std::unique_ptr<FusedSgdTable>& table = fused_tables_[key];
      if (!table) table = std::make_unique<FusedSgdTable>();
      table->build(groups, batch.tensors);
      cuda::CudaGraph* graph = cuda::capturing_graph(cuda::current_stream(device_index));
      const void* device_table = graph != nullptr
                                     ? captured_device_table(*graph, *table, device_index)
                                     : table->device_table(Device(kCUDA, device_index));
      const float* skip_flag = flag_on_device ? found_inf.data_ptr<float>() : nullptr;
      cuda::launch_fused_sgd(dtype, device_table, table->layout(), device_index, skip_flag);
      ++fused_launches_;
    }
  } else {
    MINIDL_INTERNAL_ASSERT(fused_batches.empty(), "CUDA parameters in a build without CUDA");
  }
}

const void* SGD::captured_device_table(cuda::CudaGraph& graph, const FusedSgdTable& table,
                                       int device_index) {
  // Note [Fused SGD under CUDA graph capture]: the graph gets a table of its own, in its private
  // pool; the eager table (and its upload cache) stays as it was, so an eager step between
  // replays cannot overwrite what the graph reads. The image's tensors and chunks never change
  // for this graph (their addresses are the graph's); its groups section is rewritten from the
  // optimizer's current options before each replay and uploaded when it changed.
  auto captured = std::make_shared<CapturedDeviceTable>(table.image(), Device(kCUDA, device_index));
  std::vector<bool> momentum_at_capture;
  for (const OptimizerParamGroup& group : param_groups())
    momentum_at_capture.push_back(as_sgd_options(group.options(), "SGD").momentum() != 0);
  graph.add_replay_hook([captured, momentum_at_capture, owner = std::weak_ptr<SGD*>(alive_)] {
    // A destroyed optimizer's hyper-parameters can no longer change: the last ones stay.
    if (const std::shared_ptr<SGD*> sgd = owner.lock()) {
      const std::vector<SgdGroupParameters> groups =
          (*sgd)->group_parameters_for_replay(momentum_at_capture);
      captured->write(0, groups.data(), groups.size() * sizeof(SgdGroupParameters));
    }
    captured->upload_changes();
  });
  return captured->device_data();
}

std::vector<SgdGroupParameters> SGD::group_parameters_for_replay(
    const std::vector<bool>& momentum_at_capture) const {
  MINIDL_CHECK(param_groups().size() == momentum_at_capture.size(), "SGD: ", param_groups().size(),
               " param groups before this CUDA graph replay, but ", momentum_at_capture.size(),
               " when its step was captured; capture the step again ", "after add_param_group");
  std::vector<SgdGroupParameters> groups;
  for (size_t g = 0; g < param_groups().size(); ++g) {
    const std::string where = detail::concat("SGD replay of a captured step: param group ", g);
    const SGDOptions& options = as_sgd_options(param_groups()[g].options(), where);
    check_options(options, where);
    // The captured table says per parameter whether a momentum buffer exists.
    MINIDL_CHECK((options.momentum() != 0) == momentum_at_capture[g], where, ": momentum is ",
                 options.momentum(), " but was ", momentum_at_capture[g] ? "nonzero" : "zero",
                 " when the step was captured into a CUDA graph; capture the step again");
    groups.push_back(group_parameters(options));
  }
  return groups;
}

SGD::FusedStats SGD::fused_stats() const {
  FusedStats stats;
  stats.kernel_launches = fused_launches_;
  for (const auto& [key, table] : fused_tables_) stats.table_uploads += table->uploads();
  return stats;
}

}  // namespace minidl::optim
