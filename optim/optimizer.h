#pragma once
// Optimizer: parameters in groups, each group with its own options (learning rate, weight
// decay, ...), plus per-parameter state such as momentum buffers; the base of every optimizer
// (through MultiTensorOptimizer, optim/multi_tensor_optimizer.h), shaped as
// torch.optim.Optimizer and LibTorch's torch::optim::Optimizer.
//
//   // No weight decay on biases and batch-norm parameters:
//   optim::SGD optimizer({optim::OptimizerParamGroup(decayed),
//                         optim::OptimizerParamGroup(not_decayed,
//                                                    optim::SGDOptions(0.1).weight_decay(0))},
//                        optim::SGDOptions(0.1).momentum(0.9).weight_decay(5e-4));
//
// The optimizer holds the parameter tensors (aliases of the module's), so create it after the
// model has been moved to its device, as in PyTorch. A parameter may appear in one group only.
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "minidl/core/tensor.h"
#include "minidl/optim/optimizer_state_dict.h"
#include "minidl/optim/scalar_map.h"

namespace minidl::optim {

// Hyper-parameters of one parameter group. Each optimizer derives its own (SGDOptions,
// AdamOptions, ...).
class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  // Every optimizer has a learning rate; schedulers set it through these.
  virtual double get_lr() const = 0;
  virtual void set_lr(double lr) = 0;
  // The options by name, as PyTorch's param_groups entries ("lr", "momentum", ...), with
  // bools as 0 or 1; and back, where a missing or unexpected name is an error naming `what`.
  virtual ScalarMap to_scalars() const = 0;
  virtual void load_scalars(const ScalarMap& scalars, const std::string& what) = 0;
};

// Parameters with, optionally, their own options; without, the optimizer's defaults apply.
class OptimizerParamGroup {
 public:
  OptimizerParamGroup(std::vector<Tensor> params);  // NOLINT: implicit, as in LibTorch
  OptimizerParamGroup(std::vector<Tensor> params, const OptimizerOptions& options);
  OptimizerParamGroup(const OptimizerParamGroup& other);
  OptimizerParamGroup& operator=(const OptimizerParamGroup& other);
  OptimizerParamGroup(OptimizerParamGroup&&) noexcept = default;
  OptimizerParamGroup& operator=(OptimizerParamGroup&&) noexcept = default;

  std::vector<Tensor>& params() { return params_; }
  const std::vector<Tensor>& params() const { return params_; }
  bool has_options() const { return options_ != nullptr; }
  OptimizerOptions& options();
  const OptimizerOptions& options() const;
  void set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); }

 private:
  std::vector<Tensor> params_;
  std::unique_ptr<OptimizerOptions> options_;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient; the others are skipped.
  virtual void step() = 0;
  // step(), skipped when `found_inf` (a one-element float32 tensor on the parameters' device,
  // written by amp::GradScaler) is nonzero. This default reads the flag on the host, which
  // waits for the device on CUDA; MultiTensorOptimizer overrides it to decide on the device.
  virtual void step_unless_found_inf(const Tensor& found_inf);

  // Drops every parameter's gradient (set_to_none, the default since PyTorch 2.0, which saves
  // the memory and the fill), or fills it with zeros.
  void zero_grad(bool set_to_none = true);

  // Appends a group; without options of its own it gets a copy of the defaults.
  void add_param_group(const OptimizerParamGroup& group);
  std::vector<OptimizerParamGroup>& param_groups() { return groups_; }
  const std::vector<OptimizerParamGroup>& param_groups() const { return groups_; }
  const OptimizerOptions& defaults() const { return *defaults_; }
  // Every parameter, group by group: position i here is position i in state_dict().
  std::vector<Tensor> parameters() const;
  // The tensors whose .grad step() reads, which amp::GradScaler unscales: parameters(), unless
  // the optimizer steps other tensors (distributed::ZeroRedundancyOptimizer's reduce-scatter
  // form steps this rank's flat slices of the parameters).
  virtual std::vector<Tensor> stepped_tensors() const { return parameters(); }
  // The state of `param` (e.g. {"momentum_buffer": ...}), or null before its first step.
  const ParamState* state(const Tensor& param) const;

  // A snapshot: state tensors are copies (on the parameters' device), so later steps do not
  // change it. See optimizer_state_dict.h for the layout and the flat form for files.
  // Virtual for optimizers that keep their state elsewhere (distributed::ZeroRedundancyOptimizer).
  virtual OptimizerStateDict state_dict() const;
  // Replaces the options of every group and the state of every parameter, matching them by
  // position as PyTorch does. The groups must hold as many parameters as the state's, the
  // options the same names, and state tensors their parameter's shape; they are copied to their
  // parameter's device, dtype and layout. All of that is checked before anything changes. Option
  // values are checked by the next step(), as everywhere options change (see check_options).
  virtual void load_state_dict(const OptimizerStateDict& state_dict);

 protected:
  explicit Optimizer(std::unique_ptr<OptimizerOptions> defaults);

  // The state of `param`, created empty on first use.
  ParamState& mutable_state(const Tensor& param);
  // Throws, naming `where`, when `options` are not valid for this optimizer. Called for the
  // defaults and every added group, and by step() for every group before anything is updated
  // (schedulers and load_state_dict change options between steps).
  virtual void check_options(const OptimizerOptions& options, const std::string& where) const = 0;
  // Throws, naming `where`, when a loaded state entry does not fit `param`.
  virtual void check_state_entry(const Tensor& param, const std::string& key, const Tensor& value,
                                 const std::string& where) const = 0;
  // What load_state_dict keeps for a checked state entry: a copy of `value` on the parameter's
  // device, with the parameter's dtype and layout when it has the parameter's shape, else with
  // its own dtype (this default).
  virtual Tensor make_loaded_state(const Tensor& param, const std::string& key,
                                   const Tensor& value) const;
  // "SGD", for messages.
  virtual const char* name() const = 0;

 private:
  std::unique_ptr<OptimizerOptions> defaults_;
  std::vector<OptimizerParamGroup> groups_;
  std::unordered_map<const TensorImpl*, ParamState> state_;
};

}  // namespace minidl::optim
