// CPU pooling: each task takes whole [H, W] planes (n, c) and applies the per-element math of
// ops/pool_math.h to every output (forward) or input (backward) position of its planes. Max
// pooling computes the same results its own way: the forward a row of windows at a time without
// branches (max_pool2d_kernel), the backward scattering from the outputs
// (max_pool2d_backward_kernel).
#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "minidl/core/parallel.h"
#include "minidl/ops/pool_kernels.h"

namespace minidl::cpu {

namespace {

// float for float32 and the 16-bit types, double for float64.
template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Reads of one task: enough to amortise starting it.
constexpr int64_t kTaskReads = 16384;

pool::Strides4 strides_of(const Tensor& t) {
  return {t.stride(0), t.stride(1), t.stride(2), t.stride(3)};
}

// Calls fn(n, c, h, w) for every position of `t`'s [N, C, H, W] planes, planes split over the
// threads. `reads_per_position` estimates the work, to size the tasks.
template <class Fn>
void for_each_position(const Tensor& t, int64_t reads_per_position, const Fn& fn) {
  const int64_t channels = t.size(1), height = t.size(2), width = t.size(3);
  const int64_t planes = t.size(0) * channels;
  const int64_t reads_per_plane = std::max<int64_t>(1, height * width * reads_per_position);
  const int64_t grain = std::max<int64_t>(1, kTaskReads / reads_per_plane);
  parallel_for(0, planes, grain, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t n = plane / channels, c = plane % channels;
      for (int64_t h = 0; h < height; ++h)
        for (int64_t w = 0; w < width; ++w) fn(n, c, h, w);
    }
  });
}

// Reads per output of a window, and per input of the backward gather.
int64_t window_reads(const pool::Window2d& g) { return g.h.kernel * g.w.kernel; }
int64_t covering_reads(const pool::Window2d& g) {
  return (g.h.kernel / g.h.stride + 1) * (g.w.kernel / g.w.stride + 1);
}
int64_t window_reads(const pool::Adaptive2d& g) {
  return (g.h.in / g.h.out + 2) * (g.w.in / g.w.out + 2);
}
int64_t covering_reads(const pool::Adaptive2d& g) {
  return (g.h.out / g.h.in + 2) * (g.w.out / g.w.in + 2);
}

// True when every window lies wholly inside the input (no padding, none cut off at the end).
bool windows_inside(const pool::WindowAxis& axis) {
  return axis.padding == 0 && (axis.out - 1) * axis.stride + axis.kernel <= axis.in;
}

// take ? value : best for max pooling's running maximum and its index, as masks, which the
// compiler keeps free of branches. NaN wins and a later NaN takes the index; ties keep the first.
template <class Acc>
void keep_larger(Acc value, int64_t index, Acc& best, int64_t& best_index) {
  using Bits = std::conditional_t<sizeof(Acc) == 4, uint32_t, uint64_t>;
  const bool take = (value > best) | (value != value);
  const Bits mask = Bits{0} - static_cast<Bits>(take);
  best =
      std::bit_cast<Acc>((std::bit_cast<Bits>(value) & mask) | (std::bit_cast<Bits>(best) & ~mask));
  best_index ^= (best_index ^ index) & -static_cast<int64_t>(take);
}

// The same maxima and indices as pool::max_pool_element, one plane at a time. Which element of
// a window wins is random on real data: a branch per element, mispredicted half the time, made
// max pooling a fifth of a LeNet training step (perf, 2 cores). So the running maximum is kept
// with masks, and where every window lies inside the input (LeNet's, and any unpadded pooling)
// a whole output row advances one window element at a time, its outputs independent of each
// other, instead of finishing one window's chain of dependent comparisons before the next.
void max_pool2d_kernel(const Tensor& out, const Tensor& indices, const Tensor& input,
                       const pool::Window2d& window) {
  visit_floating(input.dtype(), "max_pool2d", [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    const T* in = input.data_ptr<T>();
    T* values = out.data_ptr<T>();
    int64_t* positions = indices.data_ptr<int64_t>();
    const pool::Strides4 in_s = strides_of(input), out_s = strides_of(out),
                         index_s = strides_of(indices);
    const pool::WindowAxis &rows = window.h, &cols = window.w;
    const bool inside = windows_inside(rows) && windows_inside(cols);
    const int64_t channels = out.size(1), planes = out.size(0) * channels;
    const int64_t reads_per_plane =
        std::max<int64_t>(1, rows.out * cols.out * window_reads(window));
    parallel_for(
        0, planes, std::max<int64_t>(1, kTaskReads / reads_per_plane),
        [&](int64_t begin, int64_t end) {
          std::vector<Acc> best(static_cast<size_t>(cols.out));
          std::vector<int64_t> best_index(static_cast<size_t>(cols.out));
          for (int64_t plane = begin; plane < end; ++plane) {
            const int64_t n = plane / channels, c = plane % channels;
            const T* in_plane = in + n * in_s.n + c * in_s.c;
            auto at = [&](int64_t h, int64_t w) {
              return static_cast<Acc>(in_plane[h * in_s.h + w * in_s.w]);
            };
            for (int64_t oh = 0; oh < rows.out; ++oh) {
              const int64_t h0 = rows.begin(oh), h1 = rows.end(oh);
              if (inside) {
                for (int64_t ow = 0; ow < cols.out; ++ow) {
                  best[ow] = at(h0, ow * cols.stride);
                  best_index[ow] = h0 * cols.in + ow * cols.stride;
                }
                for (int64_t h = h0; h < h1; ++h)
                  for (int64_t j = 0; j < cols.kernel; ++j)
                    for (int64_t ow = 0; ow < cols.out; ++ow) {
                      const int64_t w = ow * cols.stride + j;
                      keep_larger(at(h, w), h * cols.in + w, best[ow], best_index[ow]);
                    }
              } else {
                for (int64_t ow = 0; ow < cols.out; ++ow) {
                  const int64_t w0 = cols.begin(ow), w1 = cols.end(ow);
                  best[ow] = at(h0, w0);
                  best_index[ow] = h0 * cols.in + w0;
                  for (int64_t h = h0; h < h1; ++h)
                    for (int64_t w = w0; w < w1; ++w)
                      keep_larger(at(h, w), h * cols.in + w, best[ow], best_index[ow]);
                }
              }
              for (int64_t ow = 0; ow < cols.out; ++ow) {
                values[n * out_s.n + c * out_s.c + oh * out_s.h + ow * out_s.w] =
                    static_cast<T>(best[ow]);
                positions[n * index_s.n + c * index_s.c + oh * index_s.h + ow * index_s.w] =
                    best_index[ow];
              }
            }
          }
        });
  });
}

void avg_pool2d_kernel(const Tensor& out, const Tensor& input, const pool::Window2d& window,
                       bool count_include_pad) {
  visit_floating(input.dtype(), "avg_pool2d", [&](auto zero) {
    using T = decltype(zero);
    const T* in = input.data_ptr<T>();
    T* values = out.data_ptr<T>();
    const pool::Strides4 in_strides = strides_of(input), out_strides = strides_of(out);
    for_each_position(out, window_reads(window), [&](int64_t n, int64_t c, int64_t oh, int64_t ow) {
      values[out_strides.at(n, c, oh, ow)] = static_cast<T>(pool::avg_pool_element<acc_t<T>>(
          in, in_strides, window, count_include_pad, n, c, oh, ow));
    });
  });
}

void adaptive_avg_pool2d_kernel(const Tensor& out, const Tensor& input,
                                const pool::Adaptive2d& window) {
  visit_floating(input.dtype(), "adaptive_avg_pool2d", [&](auto zero) {
    using T = decltype(zero);
    const T* in = input.data_ptr<T>();
    T* values = out.data_ptr<T>();
    const pool::Strides4 in_strides = strides_of(input), out_strides = strides_of(out);
    for_each_position(out, window_reads(window), [&](int64_t n, int64_t c, int64_t oh, int64_t ow) {
      values[out_strides.at(n, c, oh, ow)] = static_cast<T>(
          pool::adaptive_avg_element<acc_t<T>>(in, in_strides, window, n, c, oh, ow));
    });
  });
}

// Each output sends its gradient to the input position its maximum came from, rather than each
// input scanning the outputs whose windows cover it (the gather of ops/pool_math.h, which the
// CUDA kernel uses to avoid atomics): a task owns whole planes, so no two threads write one
// element, and the outputs are visited in the (oh, ow) order the gather adds them in, so the
// sums are the same to the bit. Per plane, the sums build up in a dense buffer of the
// accumulation type.
void max_pool2d_backward_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                const Tensor& indices, const pool::Window2d& window) {
  visit_floating(grad_output.dtype(), "max_pool2d", [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    const T* grad = grad_output.data_ptr<T>();
    const int64_t* positions = indices.data_ptr<int64_t>();
    T* result = grad_input.data_ptr<T>();
    const pool::Strides4 grad_strides = strides_of(grad_output),
                         index_strides = strides_of(indices),
                         result_strides = strides_of(grad_input);
    const int64_t channels = grad_input.size(1), in_plane = window.h.in * window.w.in;
    const int64_t planes = grad_input.size(0) * channels;
    const int64_t grain = std::max<int64_t>(1, kTaskReads / std::max<int64_t>(1, in_plane));
    parallel_for(0, planes, grain, [&](int64_t begin, int64_t end) {
      std::vector<Acc> sums(static_cast<size_t>(in_plane));
      for (int64_t plane = begin; plane < end; ++plane) {
        const int64_t n = plane / channels, c = plane % channels;
        std::fill(sums.begin(), sums.end(), Acc(0));
        for (int64_t oh = 0; oh < window.h.out; ++oh)
          for (int64_t ow = 0; ow < window.w.out; ++ow)
            sums[static_cast<size_t>(positions[index_strides.at(n, c, oh, ow)])] +=
                static_cast<Acc>(grad[grad_strides.at(n, c, oh, ow)]);
        for (int64_t ih = 0; ih < window.h.in; ++ih)
          for (int64_t iw = 0; iw < window.w.in; ++iw)
            result[result_strides.at(n, c, ih, iw)] =
                static_cast<T>(sums[static_cast<size_t>(ih * window.w.in + iw)]);
      }
    });
  });
}

void avg_pool2d_backward_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                const pool::Window2d& window, bool count_include_pad) {
  visit_floating(grad_output.dtype(), "avg_pool2d", [&](auto zero) {
    using T = decltype(zero);
    const T* grad = grad_output.data_ptr<T>();
    T* result = grad_input.data_ptr<T>();
    const pool::Strides4 grad_strides = strides_of(grad_output),
                         result_strides = strides_of(grad_input);
    for_each_position(grad_input, covering_reads(window),
                      [&](int64_t n, int64_t c, int64_t ih, int64_t iw) {
                        result[result_strides.at(n, c, ih, iw)] =
                            static_cast<T>(pool::avg_pool_grad_element<acc_t<T>>(
                                grad, grad_strides, window, count_include_pad, n, c, ih, iw));
                      });
  });
}

// One axis of an adaptive window, worked out once rather than at every position (its integer
// divisions were nearly all of the backward's time: 11.7 ms of a ResNet-20 step's global pool,
// 512 x 64 x 8 x 8 in bfloat16, 2026-11-26): the outputs covering each input position, and each
// output window's extent.
struct AdaptiveAxisTable {
  std::vector<int64_t> first_covering, end_covering;  // per input position
  std::vector<int64_t> extent;                        // per output position

  explicit AdaptiveAxisTable(const pool::AdaptiveAxis& axis) {
    for (int64_t i = 0; i < axis.in; ++i) {
      first_covering.push_back(axis.first_covering(i));
      end_covering.push_back(axis.end_covering(i));
    }
    for (int64_t o = 0; o < axis.out; ++o) extent.push_back(axis.end(o) - axis.begin(o));
  }
};

// pool::adaptive_avg_grad_element's sum, in its order, from the tables.
void adaptive_avg_pool2d_backward_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                         const pool::Adaptive2d& window) {
  const AdaptiveAxisTable rows(window.h), columns(window.w);
  visit_floating(grad_output.dtype(), "adaptive_avg_pool2d", [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    const T* grad = grad_output.data_ptr<T>();
    T* result = grad_input.data_ptr<T>();
    const pool::Strides4 grad_strides = strides_of(grad_output),
                         result_strides = strides_of(grad_input);
    for_each_position(
        grad_input, covering_reads(window), [&](int64_t n, int64_t c, int64_t ih, int64_t iw) {
          Acc sum = 0;
          for (int64_t oh = rows.first_covering[ih]; oh < rows.end_covering[ih]; ++oh)
            for (int64_t ow = columns.first_covering[iw]; ow < columns.end_covering[iw]; ++ow)
              sum += static_cast<Acc>(grad[grad_strides.at(n, c, oh, ow)]) /
                     static_cast<Acc>(rows.extent[oh] * columns.extent[ow]);
          result[result_strides.at(n, c, ih, iw)] = static_cast<T>(sum);
        });
  });
}

}  // namespace

}  // namespace minidl::cpu

namespace minidl {

const PoolKernels PoolKernels::kCpu{
    .max_pool2d = cpu::max_pool2d_kernel,
    .avg_pool2d = cpu::avg_pool2d_kernel,
    .adaptive_avg_pool2d = cpu::adaptive_avg_pool2d_kernel,
    .max_pool2d_backward = cpu::max_pool2d_backward_kernel,
    .avg_pool2d_backward = cpu::avg_pool2d_backward_kernel,
    .adaptive_avg_pool2d_backward = cpu::adaptive_avg_pool2d_backward_kernel,
};

}  // namespace minidl
