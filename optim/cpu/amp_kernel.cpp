#include "minidl/optim/cpu/amp_kernel.h"

#include <atomic>
#include <vector>

#include "minidl/core/parallel.h"
#include "minidl/optim/amp_kernels.h"

namespace minidl::cpu {

namespace {

void amp_unscale_and_check(const std::vector<Tensor>& grads, const Tensor& scale,
                           const Tensor& found_inf) {
  const float inv_scale = 1.0f / *scale.data_ptr<float>();
  std::atomic<bool> any_non_finite{false};
  for (const Tensor& grad : grads) {
    visit_floating(grad.dtype(), "GradScaler unscale_", [&](auto zero) {
      using T = decltype(zero);
      T* data = static_cast<T*>(grad.data_ptr());  // dense: element i is data[i] in some order
      parallel_for(0, grad.numel(), kDefaultGrain, [&](int64_t begin, int64_t end) {
        bool non_finite = false;
        for (int64_t i = begin; i < end; ++i)
          non_finite |= optim::amp_unscale_element<T>(data, i, inv_scale);
        if (non_finite) any_non_finite.store(true, std::memory_order_relaxed);
      });
    });
  }
  if (any_non_finite.load()) *found_inf.data_ptr<float>() = 1.0f;
}

}  // namespace

void amp_update_scale(const Tensor& scale, const Tensor& growth_tracker,
                      const Tensor& consecutive_skips, const Tensor& found_inf,
                      const optim::ScaleUpdateParameters& parameters) {
  optim::amp_update_scale_state(*scale.data_ptr<float>(), *growth_tracker.data_ptr<int32_t>(),
                                *consecutive_skips.data_ptr<int32_t>(),
                                *found_inf.data_ptr<float>() != 0.0f, parameters);
}

}  // namespace minidl::cpu

namespace minidl::optim {

const AmpKernels AmpKernels::kCpu{
    .unscale_and_check = cpu::amp_unscale_and_check,
};

}  // namespace minidl::optim
