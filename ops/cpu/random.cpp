#include "minidl/core/parallel.h"
#include "minidl/core/philox.h"
#include "minidl/ops/random_kernels.h"

namespace minidl::cpu {

namespace {
// Philox costs ~40 integer operations per element, so threads pay off sooner than for copies.
constexpr int64_t kRandomGrain = 8192;

void uniform_kernel(const Tensor& out, double low, double high, GeneratorState start) {
  visit_floating(out.dtype(), "uniform_", [&](auto zero) {
    using T = decltype(zero);
    using Compute = typename philox::DrawTraits<T>::Compute;
    const auto low_c = static_cast<Compute>(low), high_c = static_cast<Compute>(high);
    const Compute span = high_c - low_c;
    T* data = static_cast<T*>(out.data_ptr());
    parallel_for(0, out.numel(), kRandomGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        data[i] = philox::uniform_element<T>(start.seed, start.offset + static_cast<uint64_t>(i),
                                             low_c, span, high_c);
    });
  });
}

void normal_kernel(const Tensor& out, double mean, double std, GeneratorState start) {
  visit_floating(out.dtype(), "normal_", [&](auto zero) {
    using T = decltype(zero);
    T* data = static_cast<T*>(out.data_ptr());
    parallel_for(0, out.numel(), kRandomGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        data[i] = philox::normal_element<T>(start.seed, start.offset + static_cast<uint64_t>(i),
                                            mean, std);
    });
  });
}

}  // namespace

}  // namespace minidl::cpu

namespace minidl {

const RandomKernels RandomKernels::kCpu{
    .uniform = cpu::uniform_kernel,
    .normal = cpu::normal_kernel,
};

}  // namespace minidl
