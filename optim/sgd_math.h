#pragma once
// The update of one element by SGD, written once as the element functor SgdOp that both
// backends' multi-tensor apply runs (optim/cpu/sgd_kernel.cpp, optim/cuda/sgd_kernel.cu), so the
// CPU tests check the math the GPU runs. It is torch.optim.SGD's rule, in its order, with g the
// gradient, p the parameter and b the momentum buffer:
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
#include <cstdint>

#include "minidl/core/half.h"
#include "minidl/core/macros.h"
#include "minidl/ops/multi_tensor_table.h"
#include "minidl/optim/optimizer_math.h"

namespace minidl::optim {

// What the step does with a parameter's momentum buffer.
enum class MomentumBufferState : int32_t {
  kNone = 0,        // momentum == 0: there is no buffer
  kInitialize = 1,  // first step: the buffer (uninitialised memory) becomes the gradient
  kUpdate = 2,      // later steps: b = momentum * b + (1 - dampening) * g
};

// One parameter group's hyper-parameters, as the host has them: the groups section of SGD's
// multi-tensor table (ops/multi_tensor_table.h), read from device memory by the CUDA kernel.
struct SgdGroupParameters {
  double lr = 0;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  int32_t nesterov = 0;  // 0 or 1
  int32_t unused_padding = 0;
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

  MINIDL_HOST_DEVICE explicit SgdCoefficients(const SgdGroupParameters& group)
      : lr(static_cast<Acc>(group.lr)),
        momentum(static_cast<Acc>(group.momentum)),
        dampening_complement(static_cast<Acc>(1.0 - group.dampening)),
        weight_decay(static_cast<Acc>(group.weight_decay)),
        nesterov(group.nesterov != 0) {}
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
  using Group = SgdGroupParameters;

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

}  // namespace minidl::optim
