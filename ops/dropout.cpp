// Dropout: validation, the generator reservation, dispatch to the kernel of
// ops/dropout_kernels.h, and backward. Backward applies the same kernel to the gradient with the
// forward's generator state, which reproduces the mask (Note [Dropout masks are recomputed,
// not stored] in ops/dropout_math.h): grad_input = grad * mask / (1 - p), itself recorded the same
// way, so that every derivative of dropout (create_graph) is the same mask.
#include "minidl/ops/dropout.h"

#include <cmath>

#include "minidl/core/autograd/function.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/dispatch.h"
#include "minidl/core/generator.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/dropout_kernels.h"
#include "minidl/ops/elementwise.h"

namespace minidl {

namespace {

// out = mask(start) * input / (1 - p), for a contiguous input.
Tensor masked(const Tensor& input, double p, GeneratorState start) {
  Tensor out = empty(input.sizes(), TensorOptions(input.options()).requires_grad(false));
  if (input.numel() == 0) return out;
  kernels_for<DropoutKernels>(input.device()).dropout(out, input, p, start);
  return out;
}

// The same, recorded: its gradient is the same mask applied to the gradient, recorded again, so
// dropout is differentiable to any order (create_graph).
Tensor apply_mask(const Tensor& input, double p, GeneratorState start) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = masked(input.contiguous(), p, start);  // element i is then row-major element i
  }
  if (autograd::needs_grad({input})) {
    autograd::record(
        out, "DropoutBackward", {input},
        [p, start](const Tensor& grad) { return std::vector<Tensor>{apply_mask(grad, p, start)}; },
        autograd::DoubleBackward::kSupported);
  }
  return out;
}

}  // namespace

Tensor dropout(const Tensor& input, double p, bool training) {
  const ProfileScope profile("dropout", {input});
  check_defined(input, "dropout", "input");
  MINIDL_CHECK(p >= 0.0 && p <= 1.0, "dropout: expected a probability p in [0, 1], got ", p);
  MINIDL_CHECK(input.is_floating_point(), "dropout: expected a floating-point input (float32, ",
               "float64, float16 or bfloat16), got ", input.dtype());
  if (!training || p == 0.0) return input;
  if (p == 1.0) return mul(input, 0.0);  // 1 / (1 - p) would be infinite
  const GeneratorState start = default_generator().reserve(static_cast<uint64_t>(input.numel()));
  return apply_mask(input, p, start);
}

}  // namespace minidl
