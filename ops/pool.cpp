// 2-D pooling: validation, output geometry, dispatch to the kernels of ops/pool_kernels.h, and
// backward. The per-element math lives in ops/pool_math.h.
//
// Layout: the output (and, backward, the input gradient) is created in the input's memory
// format, so channels-last stays channels-last; the kernels read every tensor through its
// strides, so a non-contiguous input (a permuted view) is pooled without a copy.
#include "minidl/ops/pool.h"

#include <sstream>
#include <string>

#include "minidl/core/autograd/function.h"
#include "minidl/core/dispatch.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/pool_kernels.h"

namespace minidl {

namespace {

std::string size2_str(Size2 size) {
  std::ostringstream out;
  out << '[' << size.h << ", " << size.w << ']';
  return out.str();
}

// Checks shared by every pooling op: a floating-point [C, H, W] or [N, C, H, W] input with
// non-empty C, H and W (N may be 0).
void check_pool_input(const Tensor& input, const char* op) {
  check_defined(input, op, "input");
  MINIDL_CHECK(input.dim() == 3 || input.dim() == 4, op,
               ": expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got shape ", input.sizes());
  MINIDL_CHECK(input.is_floating_point(), op, ": expected a floating-point input (float32, ",
               "float64, float16 or bfloat16), got ", input.dtype());
  MINIDL_CHECK(input.size(-3) > 0 && input.size(-2) > 0 && input.size(-1) > 0, op,
               ": expected an input with non-zero C, H and W, got shape ", input.sizes());
}

// The geometry of a fixed-window pooling of `input` (3-D or 4-D), validated as PyTorch does.
pool::Window2d fixed_window(const Tensor& input, Size2 kernel, std::optional<Size2> stride_or_none,
                            Size2 padding, const char* op) {
  const Size2 stride = stride_or_none.value_or(kernel);
  MINIDL_CHECK(kernel.h > 0 && kernel.w > 0, op, ": expected a kernel size > 0, got ",
               size2_str(kernel));
  MINIDL_CHECK(stride.h > 0 && stride.w > 0, op, ": expected a stride > 0, got ",
               size2_str(stride));
  MINIDL_CHECK(padding.h >= 0 && padding.w >= 0, op, ": expected padding >= 0, got ",
               size2_str(padding));
  MINIDL_CHECK(padding.h <= kernel.h / 2 && padding.w <= kernel.w / 2, op,
               ": expected padding at most half the kernel size (at most ",
               size2_str({kernel.h / 2, kernel.w / 2}), " for kernel ", size2_str(kernel),
               "), got padding ", size2_str(padding));
  const int64_t in_h = input.size(-2), in_w = input.size(-1);
  const Size2 padded{in_h + 2 * padding.h, in_w + 2 * padding.w};
  MINIDL_CHECK(kernel.h <= padded.h && kernel.w <= padded.w, op, ": kernel ", size2_str(kernel),
               " is larger than the padded input ", size2_str(padded), " (input of shape ",
               input.sizes(), " with padding ", size2_str(padding), ")");
  const int64_t out_h = (padded.h - kernel.h) / stride.h + 1;
  const int64_t out_w = (padded.w - kernel.w) / stride.w + 1;
  return {{in_h, out_h, kernel.h, stride.h, padding.h},
          {in_w, out_w, kernel.w, stride.w, padding.w}};
}

Shape pooled_sizes(const Tensor& input4, int64_t out_h, int64_t out_w) {
  return {input4.size(0), input4.size(1), out_h, out_w};
}

// Runs `pool4` on a 4-D view of `input`, and returns its result in the input's rank.
template <class Pool4>
Tensor on_batched(const Tensor& input, const Pool4& pool4) {
  if (input.dim() == 4) return pool4(input);
  return pool4(input.unsqueeze(0)).squeeze(0);
}

Tensor max_pool2d_4d(const Tensor& input, const pool::Window2d& window) {
  const ProfileScope profile("max_pool2d", {input});
  const MemoryFormat format = input.suggest_memory_format();
  const Shape out_sizes = pooled_sizes(input, window.h.out, window.w.out);
  Tensor out = empty(out_sizes, input.options(), format);
  Tensor indices = empty(out_sizes, TensorOptions(kInt64).device(input.device()), format);
  if (out.numel() > 0)
    kernels_for<PoolKernels>(input.device()).max_pool2d(out, indices, input, window);
  if (autograd::needs_grad({input})) {
    // The argmax positions are all backward needs: the input is not kept.
    const Shape& input_sizes = input.sizes();
    const TensorOptions input_options = input.options();
    autograd::record(out, "MaxPool2dBackward", {input},
                     [indices, window, input_sizes, input_options, format](const Tensor& grad) {
                       Tensor grad_input = empty(input_sizes, input_options, format);
                       if (grad_input.numel() == 0) return std::vector<Tensor>{grad_input};
                       kernels_for<PoolKernels>(grad_input.device())
                           .max_pool2d_backward(grad_input, grad, indices, window);
                       return std::vector<Tensor>{grad_input};
                     });
  }
  return out;
}

Tensor avg_pool2d_4d(const Tensor& input, const pool::Window2d& window, bool count_include_pad) {
  const ProfileScope profile("avg_pool2d", {input});
  const MemoryFormat format = input.suggest_memory_format();
  Tensor out = empty(pooled_sizes(input, window.h.out, window.w.out), input.options(), format);
  if (out.numel() > 0)
    kernels_for<PoolKernels>(input.device()).avg_pool2d(out, input, window, count_include_pad);
  if (autograd::needs_grad({input})) {
    const Shape& input_sizes = input.sizes();
    const TensorOptions input_options = input.options();
    autograd::record(
        out, "AvgPool2dBackward", {input},
        [window, count_include_pad, input_sizes, input_options, format](const Tensor& grad) {
          Tensor grad_input = empty(input_sizes, input_options, format);
          if (grad_input.numel() == 0) return std::vector<Tensor>{grad_input};
          kernels_for<PoolKernels>(grad_input.device())
              .avg_pool2d_backward(grad_input, grad, window, count_include_pad);
          return std::vector<Tensor>{grad_input};
        });
  }
  return out;
}

Tensor adaptive_avg_pool2d_4d(const Tensor& input, const pool::Adaptive2d& window) {
  const ProfileScope profile("adaptive_avg_pool2d", {input});
  const MemoryFormat format = input.suggest_memory_format();
  Tensor out = empty(pooled_sizes(input, window.h.out, window.w.out), input.options(), format);
  if (out.numel() > 0)
    kernels_for<PoolKernels>(input.device()).adaptive_avg_pool2d(out, input, window);
  if (autograd::needs_grad({input})) {
    const Shape& input_sizes = input.sizes();
    const TensorOptions input_options = input.options();
    autograd::record(out, "AdaptiveAvgPool2dBackward", {input},
                     [window, input_sizes, input_options, format](const Tensor& grad) {
                       Tensor grad_input = empty(input_sizes, input_options, format);
                       if (grad_input.numel() == 0) return std::vector<Tensor>{grad_input};
                       kernels_for<PoolKernels>(grad_input.device())
                           .adaptive_avg_pool2d_backward(grad_input, grad, window);
                       return std::vector<Tensor>{grad_input};
                     });
  }
  return out;
}

}  // namespace

Tensor max_pool2d(const Tensor& input, Size2 kernel, std::optional<Size2> stride, Size2 padding) {
  check_pool_input(input, "max_pool2d");
  const pool::Window2d window = fixed_window(input, kernel, stride, padding, "max_pool2d");
  return on_batched(input, [&](const Tensor& input4) { return max_pool2d_4d(input4, window); });
}

Tensor avg_pool2d(const Tensor& input, Size2 kernel, std::optional<Size2> stride, Size2 padding,
                  bool count_include_pad) {
  check_pool_input(input, "avg_pool2d");
  const pool::Window2d window = fixed_window(input, kernel, stride, padding, "avg_pool2d");
  return on_batched(input, [&](const Tensor& input4) {
    return avg_pool2d_4d(input4, window, count_include_pad);
  });
}

Tensor adaptive_avg_pool2d(const Tensor& input, Size2 output_size) {
  check_pool_input(input, "adaptive_avg_pool2d");
  MINIDL_CHECK(output_size.h > 0 && output_size.w > 0,
               "adaptive_avg_pool2d: expected an output size >= 1, got ", size2_str(output_size));
  const pool::Adaptive2d window{{input.size(-2), output_size.h}, {input.size(-1), output_size.w}};
  return on_batched(input,
                    [&](const Tensor& input4) { return adaptive_avg_pool2d_4d(input4, window); });
}

}  // namespace minidl
