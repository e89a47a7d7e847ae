#pragma once
// The update of one element by SGD, written once for the CPU loop (optim/cpu/sgd_kernel.cpp)
// and the fused CUDA kernel (optim/cuda/sgd_kernel.cu), so the CPU tests check the math the GPU
// runs. It is torch.optim.SGD's rule, in its order, with g the gradient, p the parameter and
// b the momentum buffer:
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
#include <type_traits>

#include "minidl/core/half.h"
#include "minidl/core/macros.h"

namespace minidl::optim {

// What the step does with a parameter's momentum buffer.
enum class MomentumBufferState : int32_t {
  kNone = 0,        // momentum == 0: there is no buffer
  kInitialize = 1,  // first step: the buffer (uninitialised memory) becomes the gradient
  kUpdate = 2,      // later steps: b = momentum * b + (1 - dampening) * g
};

// One parameter group's hyper-parameters, as the host has them. A plain struct of fixed layout:
// the fused CUDA step reads an array of these from device memory.
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
using sgd_acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

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

// `value` rounded to T and back: the identity for float and double.
template <class T, class Acc>
MINIDL_HOST_DEVICE Acc round_through(Acc value) {
  if constexpr (std::is_same_v<T, Acc>)
    return value;
  else
    return static_cast<Acc>(T(value));
}

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

}  // namespace minidl::optim
