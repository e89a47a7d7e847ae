// CPU group normalisation. Rows (sample, group) are independent: the forward pass and
// grad_input are the row kernels it shares with layer norm (ops/cpu/normalize_rows.h), each
// element under its channel's weight and bias. grad_weight and
// grad_bias run in parallel over channels, each channel's sum by one thread, sample by sample in
// order: results are the same bits at any thread count. The math is that of
// ops/group_norm_math.h and ops/layer_norm_math.h, shared with the CUDA kernels.
#include "minidl/ops/cpu/normalize_rows.h"
#include "minidl/ops/group_norm_kernels.h"

namespace minidl::cpu {

namespace {

using normalize_rows::acc_t;
using normalize_rows::data_or_null;
using normalize_rows::for_each_item;
using normalize_rows::lane_sum;

void group_norm_forward_kernel(const Tensor& out, const Tensor& mean, const Tensor& rstd,
                               const Tensor& input, const Tensor& weight, const Tensor& bias,
                               const group_norm_math::GroupLayout& layout, double eps) {
  visit_floating(input.dtype(), "group_norm", [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    normalize_rows::forward(out.data_ptr<T>(), mean.data_ptr<Acc>(), rstd.data_ptr<Acc>(),
                            input.data_ptr<T>(), data_or_null<Acc>(weight), data_or_null<Acc>(bias),
                            layout.rows(), static_cast<Acc>(eps),
                            group_norm_math::ChannelParameter{layout});
  });
}

void group_norm_backward_input_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                      const Tensor& input, const Tensor& mean, const Tensor& rstd,
                                      const Tensor& weight,
                                      const group_norm_math::GroupLayout& layout) {
  visit_floating(input.dtype(), "group_norm", [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    normalize_rows::backward_input(grad_input.data_ptr<T>(), grad_output.data_ptr<T>(),
                                   input.data_ptr<T>(), mean.data_ptr<Acc>(), rstd.data_ptr<Acc>(),
                                   data_or_null<Acc>(weight), layout.rows(),
                                   group_norm_math::ChannelParameter{layout});
  });
}

void group_norm_backward_parameters_kernel(const Tensor& grad_weight, const Tensor& grad_bias,
                                           const Tensor& grad_output, const Tensor& input,
                                           const Tensor& mean, const Tensor& rstd,
                                           const group_norm_math::GroupLayout& layout) {
  visit_floating(input.dtype(), "group_norm", [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    const T* x = input.data_ptr<T>();
    const T* dy = grad_output.data_ptr<T>();
    const Acc* mean_data = mean.data_ptr<Acc>();
    const Acc* rstd_data = rstd.data_ptr<Acc>();
    Acc* grad_weight_out = grad_weight.defined() ? grad_weight.data_ptr<Acc>() : nullptr;
    Acc* grad_bias_out = grad_bias.defined() ? grad_bias.data_ptr<Acc>() : nullptr;
    const int64_t spatial = layout.spatial, channels = layout.channels;
    for_each_item(channels, layout.samples * spatial, [&](int64_t c) {
      Acc weight_sum = 0, bias_sum = 0;
      for (int64_t n = 0; n < layout.samples; ++n) {
        const int64_t row = layout.row_of(n, c);
        const Acc row_mean = mean_data[row], row_rstd = rstd_data[row];
        const T* x_plane = x + (n * channels + c) * spatial;
        const T* dy_plane = dy + (n * channels + c) * spatial;
        weight_sum += lane_sum<Acc>(spatial, [&](int64_t s) {
          return static_cast<Acc>(dy_plane[s]) *
                 layer_norm_math::normalized(static_cast<Acc>(x_plane[s]), row_mean, row_rstd);
        });
        bias_sum +=
            lane_sum<Acc>(spatial, [&](int64_t s) { return static_cast<Acc>(dy_plane[s]); });
      }
      if (grad_weight_out) grad_weight_out[c] = weight_sum;
      if (grad_bias_out) grad_bias_out[c] = bias_sum;
    });
  });
}

}  // namespace

}  // namespace minidl::cpu

namespace minidl {

const GroupNormKernels GroupNormKernels::kCpu{
    .group_norm_forward = cpu::group_norm_forward_kernel,
    .group_norm_backward_input = cpu::group_norm_backward_input_kernel,
    .group_norm_backward_parameters = cpu::group_norm_backward_parameters_kernel,
};

}  // namespace minidl
