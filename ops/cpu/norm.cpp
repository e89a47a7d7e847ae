// CPU batch normalisation. Per-channel reductions run one channel per task, folding each
// (n, c) plane into its own accumulator and merging the planes in n order, so results do not
// depend on the thread count. Element-wise passes run over (n, c) planes. The math is that of
// ops/norm_math.h, shared with the CUDA kernels.
#include <algorithm>
#include <type_traits>

#include "minidl/core/parallel.h"
#include "minidl/ops/cpu/vector_versions.h"
#include "minidl/ops/norm_kernels.h"

namespace minidl::cpu {

namespace {

// float for float32 and the 16-bit types, double for float64.
template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Elements one task handles: enough to amortise starting it.
constexpr int64_t kTaskElements = 16384;

template <class Acc>
const Acc* data_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr<Acc>() : nullptr;
}
template <class Acc>
Acc* mutable_data_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr<Acc>() : nullptr;
}

// Where a plane's pointer begins, or null for an undefined (optional) tensor.
template <class T>
const T* plane_or_null(const T* data, int64_t first) {
  return data ? data + first : nullptr;
}

// y = normalize(x) over one contiguous plane.
template <class T, class Acc>
inline void apply_plane(const T* x, T* y, int64_t size, Acc mean, Acc invstd, Acc w, Acc b) {
  for (int64_t s = 0; s < size; ++s)
    y[s] = static_cast<T>(norm::normalize(static_cast<Acc>(x[s]), mean, invstd, w, b));
}

MINIDL_AVX512 void apply_plane_avx512(const BFloat16* x, BFloat16* y, int64_t size, float mean,
                                      float invstd, float w, float b) {
  apply_plane<BFloat16, float>(x, y, size, mean, invstd, w, b);
}

// batch_norm_relu's epilogue over one plane of `size` elements `step` apart: relu(y + residual)
// (residual null: relu(y)), rounded as add and relu round (ops/norm_math.h).
template <class Acc, class T>
inline void add_relu_plane(T* y, const T* residual, int64_t size, int64_t step) {
  if (residual) {
    for (int64_t s = 0; s < size; ++s)
      y[s * step] =
          norm::relu_rounded<Acc>(norm::add_rounded<Acc>(y[s * step], residual[s * step]));
  } else {
    for (int64_t s = 0; s < size; ++s) y[s * step] = norm::relu_rounded<Acc>(y[s * step]);
  }
}

MINIDL_AVX512 void add_relu_plane_avx512(BFloat16* y, const BFloat16* residual, int64_t size) {
  add_relu_plane<float>(y, residual, size, 1);
}

// The gradient at element i: grad_output's, or with kMasked relu's backward of it, read from
// batch_norm_relu's output (norm::relu_passed). A template flag rather than a test per element,
// so that each loop stays as vectorisable as without the mask.
template <bool kMasked, class Acc, class T>
inline Acc grad_at(const T* dy, const T* relu_output, int64_t i) {
  if constexpr (kMasked)
    return norm::relu_passed(static_cast<Acc>(dy[i]), static_cast<Acc>(relu_output[i]));
  else
    return static_cast<Acc>(dy[i]);
}

// Calls fn(std::bool_constant<masked>), masked when relu_output is not null.
template <class T, class Fn>
void with_relu_mask(const T* relu_output, const Fn& fn) {
  if (relu_output)
    fn(std::true_type{});
  else
    fn(std::false_type{});
}

// dx of one contiguous plane.
template <bool kMasked, class T, class Acc>
inline void input_grad_plane(const T* x, const T* dy, const T* relu_output, T* dx, int64_t size,
                             norm::Statistics statistics, Acc mean, Acc invstd, Acc w, Acc sum_dy,
                             Acc sum_dy_xmu, int64_t count) {
  for (int64_t s = 0; s < size; ++s)
    dx[s] = static_cast<T>(norm::input_grad(statistics, grad_at<kMasked, Acc>(dy, relu_output, s),
                                            static_cast<Acc>(x[s]), mean, invstd, w, sum_dy,
                                            sum_dy_xmu, count));
}

MINIDL_AVX512 void input_grad_plane_avx512(const BFloat16* x, const BFloat16* dy,
                                           const BFloat16* relu_output, BFloat16* dx, int64_t size,
                                           norm::Statistics statistics, float mean, float invstd,
                                           float w, float sum_dy, float sum_dy_xmu, int64_t count) {
  if (relu_output)
    input_grad_plane<true, BFloat16, float>(x, dy, relu_output, dx, size, statistics, mean, invstd,
                                            w, sum_dy, sum_dy_xmu, count);
  else
    input_grad_plane<false, BFloat16, float>(x, dy, relu_output, dx, size, statistics, mean, invstd,
                                             w, sum_dy, sum_dy_xmu, count);
}

// Whether a plane of `T` in `layout` takes the AVX-512 loops (Note [Loops compiled for AVX-512
// and AVX2] in ops/cpu/vector_versions.h).
template <class T>
bool avx512_plane(const norm::ChannelLayout& layout) {
  return std::is_same_v<T, BFloat16> && layout.stride_s == 1 && has_avx512();
}

// Calls fn(c) for every channel, several channels to a task when channels are small.
template <class Fn>
void for_each_channel(const norm::ChannelLayout& layout, const Fn& fn) {
  const int64_t grain = std::max<int64_t>(1, kTaskElements / std::max<int64_t>(layout.count(), 1));
  parallel_for(0, layout.channels, grain, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) fn(c);
  });
}

// Calls fn(n, c) for every (n, c) plane.
template <class Fn>
void for_each_plane(const norm::ChannelLayout& layout, const Fn& fn) {
  const int64_t grain = std::max<int64_t>(1, kTaskElements / std::max<int64_t>(layout.spatial, 1));
  parallel_for(0, layout.batch * layout.channels, grain, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane)
      fn(plane / layout.channels, plane % layout.channels);
  });
}

void batch_norm_statistics_kernel(const Tensor& mean, const Tensor& invstd,
                                  const Tensor& running_mean, const Tensor& running_var,
                                  const Tensor& input, const norm::ChannelLayout& layout,
                                  double momentum, double eps) {
  visit_floating(input.dtype(), "batch_norm", [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    const T* x = input.data_ptr<T>();
    Acc* mean_out = mean.data_ptr<Acc>();
    Acc* invstd_out = invstd.data_ptr<Acc>();
    Acc* running_mean_data = mutable_data_or_null<Acc>(running_mean);
    Acc* running_var_data = mutable_data_or_null<Acc>(running_var);
    const norm::MomentsOp<Acc> op;
    for_each_channel(layout, [&](int64_t c) {
      norm::Moments<Acc> channel = op.identity();
      for (int64_t n = 0; n < layout.batch; ++n) {
        norm::Moments<Acc> plane = op.identity();
        for (int64_t s = 0; s < layout.spatial; ++s)
          plane = op.accumulate(plane, static_cast<Acc>(x[layout.at(n, c, s)]), s);
        channel = op.combine(channel, plane);
      }
      norm::finish_statistics<Acc>(channel, c, static_cast<Acc>(eps), static_cast<Acc>(momentum),
                                   mean_out, invstd_out, running_mean_data, running_var_data);
    });
  });
}

void batch_norm_apply_kernel(const Tensor& out, const Tensor& input, const Tensor& mean,
                             const Tensor& invstd, const Tensor& weight, const Tensor& bias,
                             const norm::ChannelLayout& layout, const Tensor& residual, bool relu) {
  visit_floating(input.dtype(), "batch_norm", [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    const T* x = input.data_ptr<T>();
    T* y = out.data_ptr<T>();
    const Acc* mean_data = mean.data_ptr<Acc>();
    const Acc* invstd_data = invstd.data_ptr<Acc>();
    const Acc* weight_data = data_or_null<Acc>(weight);
    const Acc* bias_data = data_or_null<Acc>(bias);
    const T* residual_data = relu ? data_or_null<T>(residual) : nullptr;
    const auto normalize_plane = [&](int64_t n, int64_t c) {
      const Acc w = weight_data ? weight_data[c] : Acc(1);
      const Acc b = bias_data ? bias_data[c] : Acc(0);
      if constexpr (std::is_same_v<T, BFloat16>) {
        if (avx512_plane<T>(layout)) {
          const int64_t first = layout.at(n, c, 0);
          apply_plane_avx512(x + first, y + first, layout.spatial, mean_data[c], invstd_data[c], w,
                             b);
          return;
        }
      }
      for (int64_t s = 0; s < layout.spatial; ++s) {
        const int64_t i = layout.at(n, c, s);
        y[i] = static_cast<T>(
            norm::normalize(static_cast<Acc>(x[i]), mean_data[c], invstd_data[c], w, b));
      }
    };
    for_each_plane(layout, [&](int64_t n, int64_t c) {
      normalize_plane(n, c);
      if (!relu) return;
      const int64_t first = layout.at(n, c, 0);  // the epilogue while the plane is in cache
      if constexpr (std::is_same_v<T, BFloat16>) {
        if (avx512_plane<T>(layout)) {
          add_relu_plane_avx512(y + first, plane_or_null(residual_data, first), layout.spatial);
          return;
        }
      }
      add_relu_plane<Acc>(y + first, plane_or_null(residual_data, first), layout.spatial,
                          layout.stride_s);
    });
  });
}

void batch_norm_backward_reduce_kernel(const Tensor& sum_dy, const Tensor& sum_dy_xmu,
                                       const Tensor& grad_output, const Tensor& input,
                                       const Tensor& mean, const norm::ChannelLayout& layout,
                                       const Tensor& relu_output) {
  visit_floating(input.dtype(), "batch_norm", [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    const T* x = input.data_ptr<T>();
    const T* dy = grad_output.data_ptr<T>();
    const T* relu_data = data_or_null<T>(relu_output);
    const Acc* mean_data = mean.data_ptr<Acc>();
    Acc* sum_dy_out = sum_dy.data_ptr<Acc>();
    Acc* sum_dy_xmu_out = sum_dy_xmu.data_ptr<Acc>();
    const norm::GradSumsOp<Acc> op;
    with_relu_mask(relu_data, [&](auto masked) {
      for_each_channel(layout, [&](int64_t c) {
        norm::GradSums<Acc> channel = op.identity();
        for (int64_t n = 0; n < layout.batch; ++n) {
          norm::GradSums<Acc> plane = op.identity();
          for (int64_t s = 0; s < layout.spatial; ++s) {
            const int64_t i = layout.at(n, c, s);
            plane = op.accumulate(plane, grad_at<decltype(masked)::value, Acc>(dy, relu_data, i),
                                  static_cast<Acc>(x[i]), mean_data[c]);
          }
          channel = op.combine(channel, plane);
        }
        sum_dy_out[c] = channel.dy;
        sum_dy_xmu_out[c] = channel.dy_xmu;
      });
    });
  });
}

void batch_norm_backward_input_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                      const Tensor& input, const Tensor& mean, const Tensor& invstd,
                                      const Tensor& weight, const Tensor& sum_dy,
                                      const Tensor& sum_dy_xmu, const norm::ChannelLayout& layout,
                                      norm::Statistics statistics, const Tensor& relu_output) {
  visit_floating(input.dtype(), "batch_norm", [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    const T* x = input.data_ptr<T>();
    const T* dy = grad_output.data_ptr<T>();
    const T* relu_data = data_or_null<T>(relu_output);
    T* dx = grad_input.data_ptr<T>();
    const Acc* mean_data = mean.data_ptr<Acc>();
    const Acc* invstd_data = invstd.data_ptr<Acc>();
    const Acc* weight_data = data_or_null<Acc>(weight);
    const Acc* sum_dy_data = data_or_null<Acc>(sum_dy);
    const Acc* sum_dy_xmu_data = data_or_null<Acc>(sum_dy_xmu);
    const bool batch_statistics = statistics == norm::Statistics::Batch;
    for_each_plane(layout, [&](int64_t n, int64_t c) {
      const Acc w = weight_data ? weight_data[c] : Acc(1);
      const Acc channel_sum_dy = batch_statistics ? sum_dy_data[c] : Acc(0);
      const Acc channel_sum_dy_xmu = batch_statistics ? sum_dy_xmu_data[c] : Acc(0);
      if constexpr (std::is_same_v<T, BFloat16>) {
        if (avx512_plane<T>(layout)) {
          const int64_t first = layout.at(n, c, 0);
          input_grad_plane_avx512(x + first, dy + first, plane_or_null(relu_data, first),
                                  dx + first, layout.spatial, statistics, mean_data[c],
                                  invstd_data[c], w, channel_sum_dy, channel_sum_dy_xmu,
                                  layout.count());
          return;
        }
      }
      if (layout.stride_s == 1) {  // a contiguous plane: a loop the compiler vectorises
        const int64_t first = layout.at(n, c, 0);
        with_relu_mask(relu_data, [&](auto masked) {
          input_grad_plane<decltype(masked)::value, T, Acc>(
              x + first, dy + first, plane_or_null(relu_data, first), dx + first, layout.spatial,
              statistics, mean_data[c], invstd_data[c], w, channel_sum_dy, channel_sum_dy_xmu,
              layout.count());
        });
        return;
      }
      with_relu_mask(relu_data, [&](auto masked) {
        for (int64_t s = 0; s < layout.spatial; ++s) {
          const int64_t i = layout.at(n, c, s);
          dx[i] = static_cast<T>(
              norm::input_grad(statistics, grad_at<decltype(masked)::value, Acc>(dy, relu_data, i),
                               static_cast<Acc>(x[i]), mean_data[c], invstd_data[c], w,
                               channel_sum_dy, channel_sum_dy_xmu, layout.count()));
        }
      });
    });
  });
}

}  // namespace

}  // namespace minidl::cpu

namespace minidl {

const NormKernels NormKernels::kCpu{
    .batch_norm_statistics = cpu::batch_norm_statistics_kernel,
    .batch_norm_apply = cpu::batch_norm_apply_kernel,
    .batch_norm_backward_reduce = cpu::batch_norm_backward_reduce_kernel,
    .batch_norm_backward_input = cpu::batch_norm_backward_input_kernel,
};

}  // namespace minidl
