#pragma once
// Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay,
// following torch.optim.SGD's update rule exactly (written out below):
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
// The step is MultiTensorOptimizer's (optim/multi_tensor_optimizer.h): CPU parameters are
// updated tensor by tensor, each loop split across the CPU threads; CUDA parameters by ONE fused
// kernel launch per (device, dtype) (one in all for an fp32 model; Note [Multi-tensor apply] in
// ops/multi_tensor_table.h). Parameters must be dense (contiguous, channels-last or any other
// permutation without gaps); a gradient laid out differently from its parameter is copied into
// the parameter's layout first. It runs under NoGradGuard and bumps the version of every
// parameter and buffer it writes.
//
// A step captured into a CUDA graph (core/cuda/graph.h) launches the same kernel on a table of
// the graph's own, whose hyper-parameters are refreshed from the param groups' options before
// every replay, so a scheduler's lr applies to replays as to eager steps (Note [Multi-tensor
// steps under CUDA graph capture] in optim/multi_tensor_optimizer.cpp). The momentum buffers
// must exist before the capture (one eager step), and the param groups and whether each has
// momentum must not change after it.
//
// step_unless_found_inf (GradScaler): a momentum buffer created by a step that carries a CUDA
// found_inf flag starts at zero instead of uninitialised, so a skipped first step leaves it
// harmless; the next step then treats it as an existing buffer (b = momentum * 0 +
// (1 - dampening) * g), which differs from a first step only when dampening != 0.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "minidl/core/half.h"
#include "minidl/core/macros.h"
#include "minidl/optim/multi_tensor_optimizer.h"
#include "minidl/optim/optimizer_math.h"
#include "minidl/optim/option_list.h"

namespace minidl::optim {

// The options, PyTorch's names and defaults (optim/option_list.h); lr has none, as in LibTorch.
// clang-format off
#define MINIDL_SGD_OPTIONS(option)                                                   \
  option(double, lr, 0)                                                              \
  option(double, momentum, 0)                                                        \
  option(double, dampening, 0)                                                       \
  option(double, weight_decay, 0)                                                    \
  /* Nesterov momentum needs momentum > 0 and dampening == 0 (checked when used). */ \
  option(bool, nesterov, false)
// clang-format on

// One parameter group's options, as the update reads them.
struct SgdHyperparameters {
  MINIDL_OPTION_RECORD(MINIDL_SGD_OPTIONS)
};

// The update of one element, SgdOp, which both backends' multi-tensor apply run (Note [Optimizer
// updates] in optim/multi_tensor_kernels.h), so the CPU tests check the math the GPU runs, is
// torch.optim.SGD's rule, in its order, with g the gradient, p the parameter and b the momentum
// buffer:
//
//   g = g + weight_decay * p                  when weight_decay != 0
//   b = g                                     on the first step with momentum (no dampening)
//   b = momentum * b + (1 - dampening) * g    on later steps
//   g = nesterov ? g + momentum * b : b       when momentum != 0
//   p = p - lr * g
//
// Arithmetic runs in Acc: float for float32, float16 and bfloat16 parameters (PyTorch's
// "opmath" type), double for float64. Where PyTorch materialises a tensor in the parameter's
// dtype (the decayed gradient, the stored buffer), the value is rounded to that dtype here too,
// which matters only for 16-bit parameters.
// What the step does with a parameter's momentum buffer.
enum class MomentumBufferState : int32_t {
  kNone = 0,        // momentum == 0: there is no buffer
  kInitialize = 1,  // first step: the buffer (uninitialised memory) becomes the gradient
  kUpdate = 2,      // later steps: b = momentum * b + (1 - dampening) * g
};

// float, except double for double.
template <class T>
using sgd_acc_t = opmath_t<T>;

// The hyper-parameters converted once to Acc, as PyTorch converts its scalar arguments.
template <class Acc>
struct SgdCoefficients {
  Acc lr;
  Acc momentum;
  Acc dampening_complement;  // 1 - dampening, computed in double first as Python does
  Acc weight_decay;
  bool nesterov;

  MINIDL_HOST_DEVICE explicit SgdCoefficients(const SgdHyperparameters& group)
      : lr(static_cast<Acc>(group.lr)),
        momentum(static_cast<Acc>(group.momentum)),
        dampening_complement(static_cast<Acc>(1.0 - group.dampening)),
        weight_decay(static_cast<Acc>(group.weight_decay)),
        nesterov(group.nesterov) {}
};

// Updates param[i] (and momentum_buffer[i] unless `buffer_state` is kNone) from grad[i].
template <class T, class Acc = sgd_acc_t<T>>
MINIDL_HOST_DEVICE void sgd_update_element(T* param, const T* grad, T* momentum_buffer, int64_t i,
                                           const SgdCoefficients<Acc>& c,
                                           MomentumBufferState buffer_state) {
  const Acc p = static_cast<Acc>(param[i]);
  Acc direction = static_cast<Acc>(grad[i]);
  if (c.weight_decay != Acc(0)) direction = round_through<T>(direction + c.weight_decay * p);
  if (buffer_state != MomentumBufferState::kNone) {
    Acc buffer = buffer_state == MomentumBufferState::kInitialize
                     ? direction
                     : c.momentum * static_cast<Acc>(momentum_buffer[i]) +
                           c.dampening_complement * direction;
    const T stored = T(buffer);
    momentum_buffer[i] = stored;
    buffer = static_cast<Acc>(stored);
    direction = c.nesterov ? direction + c.momentum * buffer : buffer;
  }
  param[i] = T(p - c.lr * direction);
}

// SGD's table lists after the parameter and its gradient (optim/optimizer_math.h).
inline constexpr int kSgdMomentumBufferList = kFirstStateList;

// The element functor of SGD's multi-tensor apply (convention in ops/cpu/multi_tensor_apply.h).
// The momentum buffer's list is null when the group has no momentum; made by this step, the
// buffer is initialised from the gradient rather than read.
template <class T>
class SgdOp {
 public:
  using Group = SgdHyperparameters;
  static constexpr const char* kStepName = "SGD step";

  MINIDL_HOST_DEVICE SgdOp(const Group& group, const TensorListEntry& entry)
      : coefficients_(group),
        param_(static_cast<T*>(entry.data[kParamList])),
        grad_(static_cast<const T*>(entry.data[kGradList])),
        momentum_buffer_(static_cast<T*>(entry.data[kSgdMomentumBufferList])),
        buffer_state_(momentum_buffer_ == nullptr ? MomentumBufferState::kNone
                      : made_this_step(entry, kSgdMomentumBufferList)
                          ? MomentumBufferState::kInitialize
                          : MomentumBufferState::kUpdate) {}

  MINIDL_HOST_DEVICE void operator()(int64_t i) const {
    sgd_update_element<T>(param_, grad_, momentum_buffer_, i, coefficients_, buffer_state_);
  }

 private:
  SgdCoefficients<sgd_acc_t<T>> coefficients_;
  T* param_;
  const T* grad_;
  T* momentum_buffer_;
  MomentumBufferState buffer_state_;
};

MINIDL_OPTIMIZER_UPDATE(SgdOp)

class SGDOptions : public OptionsWithRecord<SGDOptions, SgdHyperparameters> {
 public:
  static constexpr const char* kName = "SGDOptions";
  explicit SGDOptions(double lr) { values_.lr = lr; }

  MINIDL_OPTION_ACCESSORS(MINIDL_SGD_OPTIONS)
};

class SGD : public ElementwiseOptimizer<SGDOptions, SgdOp> {
 public:
  SGD(std::vector<Tensor> params, const SGDOptions& defaults);
  // Groups without options of their own use `defaults`.
  SGD(std::vector<OptimizerParamGroup> groups, const SGDOptions& defaults);

 private:
  const char* name() const override { return "SGD"; }
  void check_options(const OptimizerOptions& options, const std::string& where) const override;
  const std::vector<StateList>& state_lists() const override;
  uint32_t state_mask(const OptimizerOptions& options) const override;
  void check_unchanged_since_capture(const OptimizerOptions& at_capture,
                                     const OptimizerOptions& now,
                                     const std::string& where) const override;
};

}  // namespace minidl::optim
