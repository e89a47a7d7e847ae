#pragma once
// Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay,
// following torch.optim.SGD's update rule exactly (written out in optim/sgd_math.h):
//
//   optim::SGD optimizer(model->parameters(),
//                        optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(5e-4));
//   ...
//   optimizer.zero_grad();
//   loss.backward();
//   optimizer.step();
//
// The momentum buffer of a parameter is made on its first step as a copy of its (decayed)
// gradient, without dampening, and is saved in state_dict() as "momentum_buffer".
//
// step() runs under NoGradGuard and bumps the version of every parameter and buffer it writes.
// CPU parameters are updated one by one, each loop split across the CPU threads. CUDA parameters
// are updated by ONE fused kernel launch per (device, dtype) (one in all for an fp32 model):
// see Note [Fused SGD table] in optim/fused_sgd_table.h. Parameters must be dense (contiguous,
// channels-last or any other permutation without gaps); a gradient laid out differently from
// its parameter is copied into the parameter's layout first.
//
// A step captured into a CUDA graph (core/cuda/graph.h) launches the same kernel on a table of
// the graph's own, whose hyper-parameters are refreshed from the param groups' options before
// every replay, so a scheduler's lr applies to replays as to eager steps (Note [Fused SGD under
// CUDA graph capture] in sgd.cpp). The momentum buffers must exist before the capture (one eager
// step), and the param groups and whether each has momentum must not change after it.
#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "minidl/optim/optimizer.h"

namespace minidl::cuda {
class CudaGraph;
}

namespace minidl::optim {

class FusedSgdTable;
struct SgdGroupParameters;

class SGDOptions : public OptimizerOptions {
 public:
  explicit SGDOptions(double lr) : lr_(lr) {}

  SGDOptions& lr(double value) {
    lr_ = value;
    return *this;
  }
  SGDOptions& momentum(double value) {
    momentum_ = value;
    return *this;
  }
  SGDOptions& dampening(double value) {
    dampening_ = value;
    return *this;
  }
  SGDOptions& weight_decay(double value) {
    weight_decay_ = value;
    return *this;
  }
  // Nesterov momentum needs momentum > 0 and dampening == 0 (checked when used).
  SGDOptions& nesterov(bool value) {
    nesterov_ = value;
    return *this;
  }

  double lr() const { return lr_; }
  double momentum() const { return momentum_; }
  double dampening() const { return dampening_; }
  double weight_decay() const { return weight_decay_; }
  bool nesterov() const { return nesterov_; }

  std::unique_ptr<OptimizerOptions> clone() const override;
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  // {"lr", "momentum", "dampening", "weight_decay", "nesterov"}
  ScalarMap to_scalars() const override;
  void load_scalars(const ScalarMap& scalars, const std::string& what) override;

 private:
  double lr_;
  double momentum_ = 0;
  double dampening_ = 0;
  double weight_decay_ = 0;
  bool nesterov_ = false;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, const SGDOptions& defaults);
  // Groups without options of their own use `defaults`.
  SGD(std::vector<OptimizerParamGroup> groups, const SGDOptions& defaults);
  ~SGD() override;

  void step() override;
  // On CUDA the fused kernel reads `found_inf` on the device and returns at once when it is
  // nonzero, so the host never waits; on the CPU the flag is read directly. A momentum buffer
  // created by a step that carries a CUDA flag starts at zero instead of uninitialised, so a
  // skipped first step leaves it harmless; the next step then treats it as an existing buffer
  // (b = momentum * 0 + (1 - dampening) * g), which differs from a first step only when
  // dampening != 0.
  void step_unless_found_inf(const Tensor& found_inf) override;

  // Counters of the fused CUDA path, for tests and benchmarks.
  struct FusedStats {
    uint64_t kernel_launches = 0;
    uint64_t table_uploads = 0;
  };
  FusedStats fused_stats() const;

 private:
  void check_options(const OptimizerOptions& options, const std::string& where) const override;
  void check_state_entry(const Tensor& param, const std::string& key, const Tensor& value,
                         const std::string& where) const override;
  const char* name() const override { return "SGD"; }
  // step() with an optional found_inf flag (undefined: always update).
  void run_step(const Tensor& found_inf);
  // The device table for a step being captured into `graph`, kept by one of its replay hooks.
  const void* captured_device_table(cuda::CudaGraph& graph, const FusedSgdTable& table,
                                    int device_index);
  // Every group's hyper-parameters now, checked against the capture (for the replay hooks).
  std::vector<SgdGroupParameters> group_parameters_for_replay(
      const std::vector<bool>& momentum_at_capture) const;

  // One table per (CUDA device index, dtype), kept between steps.
  std::map<std::pair<int, DType>, std::unique_ptr<FusedSgdTable>> fused_tables_;
  uint64_t fused_launches_ = 0;
  // Replay hooks hold it weakly: after the optimizer is gone, a graph keeps its last
  // hyper-parameters.
  std::shared_ptr<SGD*> alive_;
};

}  // namespace minidl::optim
