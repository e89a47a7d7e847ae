#include "minidl/optim/cpu/sgd_kernel.h"

#include "minidl/core/dtype.h"
#include "minidl/core/parallel.h"

namespace minidl::cpu {

using optim::MomentumBufferState;
using optim::SgdCoefficients;
using optim::SgdGroupParameters;

void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                const SgdGroupParameters& group, MomentumBufferState buffer_state) {
  const int64_t numel = param.numel();
  if (numel == 0) return;
  visit_floating(param.dtype(), "SGD step", [&](auto zero) {
    using T = decltype(zero);
    const SgdCoefficients<optim::sgd_acc_t<T>> coefficients(group);
    T* param_data = static_cast<T*>(param.data_ptr());
    const T* grad_data = static_cast<const T*>(grad.data_ptr());
    T* buffer_data = buffer_state == MomentumBufferState::kNone
                         ? nullptr
                         : static_cast<T*>(momentum_buffer.data_ptr());
    parallel_for(0, numel, kDefaultGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        optim::sgd_update_element<T>(param_data, grad_data, buffer_data, i, coefficients,
                                     buffer_state);
    });
  });
}

}  // namespace minidl::cpu
