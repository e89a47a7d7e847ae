// CPU dropout: one Philox evaluation per element (ops/dropout_math.h), split over the threads.
#include <type_traits>

#include "minidl/core/parallel.h"
#include "minidl/ops/dropout_kernels.h"
#include "minidl/ops/dropout_math.h"

namespace minidl::cpu {

namespace {
// Philox costs ~40 integer operations per element, so threads pay off sooner than for copies.
constexpr int64_t kDropoutGrain = 8192;

void dropout_kernel(const Tensor& out, const Tensor& input, double p, GeneratorState start) {
  visit_floating(input.dtype(), "dropout", [&](auto zero) {
    using T = decltype(zero);
    using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const auto scale = static_cast<Acc>(1.0 / (1.0 - p));
    const T* in = input.data_ptr<T>();
    T* result = out.data_ptr<T>();
    parallel_for(0, input.numel(), kDropoutGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const bool kept = dropout::keeps(start.seed, start.offset + static_cast<uint64_t>(i), p);
        result[i] = dropout::masked_scale(in[i], kept, scale);
      }
    });
  });
}

}  // namespace

}  // namespace minidl::cpu

namespace minidl {

const DropoutKernels DropoutKernels::kCpu{.dropout = cpu::dropout_kernel};

}  // namespace minidl
