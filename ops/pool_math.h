#pragma once
// The math of 2-D pooling, written once for the CPU loops (ops/cpu/pool.cpp) and the CUDA
// kernels (ops/cuda/pool.cu), so the CPU gradient checks exercise the index arithmetic that
// the GPU runs.
//
// Conventions:
// - Tensors are 4-D [N, C, H, W] with any strides (NCHW, NHWC or a permuted view); an element
//   is found through Strides4, so one function serves every layout.
// - Values are read in the compute type Acc (float for float32 and the 16-bit types, double
//   for float64); sums accumulate in Acc.
// - Max-pool indices are positions within one H x W plane, h * W + w, as PyTorch's.
// - Backward is a gather: each input element sums the gradients of the outputs whose windows
//   hold it, in a fixed order. No atomics, so results repeat exactly and CPU and CUDA add the
//   same terms in the same order.
#include <cstdint>

#include "minidl/core/macros.h"

namespace minidl::pool {

// Strides (in elements) of a 4-D [N, C, H, W] tensor.
struct Strides4 {
  int64_t n, c, h, w;
  MINIDL_HOST_DEVICE int64_t at(int64_t in, int64_t ic, int64_t ih, int64_t iw) const {
    return in * n + ic * c + ih * h + iw * w;
  }
};

MINIDL_HOST_DEVICE int64_t min_of(int64_t a, int64_t b) { return a < b ? a : b; }
MINIDL_HOST_DEVICE int64_t max_of(int64_t a, int64_t b) { return a > b ? a : b; }

// One spatial axis of a fixed-window pooling (max_pool2d, avg_pool2d). Output o's window is
// [o * stride - padding, o * stride - padding + kernel) in input coordinates, where positions
// outside [0, in) are padding.
struct WindowAxis {
  int64_t in, out, kernel, stride, padding;

  MINIDL_HOST_DEVICE int64_t padded_begin(int64_t o) const { return o * stride - padding; }
  // The window clipped to the real input.
  MINIDL_HOST_DEVICE int64_t begin(int64_t o) const { return max_of(padded_begin(o), 0); }
  MINIDL_HOST_DEVICE int64_t end(int64_t o) const { return min_of(padded_begin(o) + kernel, in); }
  // The window clipped to the padded input [-padding, in + padding): what count_include_pad
  // counts (PyTorch's divisor).
  MINIDL_HOST_DEVICE int64_t padded_extent(int64_t o) const {
    return min_of(padded_begin(o) + kernel, in + padding) - padded_begin(o);
  }
  // The outputs whose windows hold input position i: [first_covering, end_covering).
  MINIDL_HOST_DEVICE int64_t first_covering(int64_t i) const {
    return i + padding < kernel ? 0 : (i + padding - kernel) / stride + 1;
  }
  MINIDL_HOST_DEVICE int64_t end_covering(int64_t i) const {
    return min_of((i + padding) / stride + 1, out);
  }
};

struct Window2d {
  WindowAxis h, w;
};

// One spatial axis of adaptive pooling, with PyTorch's windows: output o covers
// [floor(o * in / out), ceil((o + 1) * in / out)). The outputs covering input i follow the
// same formula with in and out swapped (o covers i exactly when
// floor(i * out / in) <= o < ceil((i + 1) * out / in)).
struct AdaptiveAxis {
  int64_t in, out;

  static MINIDL_HOST_DEVICE int64_t floor_scaled(int64_t a, int64_t from, int64_t to) {
    return a * to / from;
  }
  static MINIDL_HOST_DEVICE int64_t ceil_scaled(int64_t a, int64_t from, int64_t to) {
    return (a * to + from - 1) / from;
  }
  MINIDL_HOST_DEVICE int64_t begin(int64_t o) const { return floor_scaled(o, out, in); }
  MINIDL_HOST_DEVICE int64_t end(int64_t o) const { return ceil_scaled(o + 1, out, in); }
  MINIDL_HOST_DEVICE int64_t first_covering(int64_t i) const { return floor_scaled(i, in, out); }
  MINIDL_HOST_DEVICE int64_t end_covering(int64_t i) const { return ceil_scaled(i + 1, in, out); }
};

struct Adaptive2d {
  AdaptiveAxis h, w;
};

template <class Acc>
struct MaxAndIndex {
  Acc value;
  int64_t index;  // h * W + w within the plane
};

// ---- forward: one output element (n, c, oh, ow) ----

// The window's maximum and where it is. NaN wins (and a later NaN takes the index), as PyTorch.
// Every window holds at least one real element, since padding <= kernel / 2.
template <class Acc, class T>
MINIDL_HOST_DEVICE MaxAndIndex<Acc> max_pool_element(const T* in, const Strides4& s,
                                                     const Window2d& g, int64_t n, int64_t c,
                                                     int64_t oh, int64_t ow) {
  const int64_t h0 = g.h.begin(oh), h1 = g.h.end(oh);
  const int64_t w0 = g.w.begin(ow), w1 = g.w.end(ow);
  MaxAndIndex<Acc> best{static_cast<Acc>(in[s.at(n, c, h0, w0)]), h0 * g.w.in + w0};
  for (int64_t h = h0; h < h1; ++h) {
    for (int64_t w = w0; w < w1; ++w) {
      const Acc value = static_cast<Acc>(in[s.at(n, c, h, w)]);
      if (value > best.value || value != value) best = {value, h * g.w.in + w};
    }
  }
  return best;
}

// What an average over output (oh, ow)'s window divides by.
MINIDL_HOST_DEVICE int64_t avg_pool_divisor(const Window2d& g, bool count_include_pad, int64_t oh,
                                            int64_t ow) {
  if (count_include_pad) return g.h.padded_extent(oh) * g.w.padded_extent(ow);
  return (g.h.end(oh) - g.h.begin(oh)) * (g.w.end(ow) - g.w.begin(ow));
}

template <class Acc, class T>
MINIDL_HOST_DEVICE Acc avg_pool_element(const T* in, const Strides4& s, const Window2d& g,
                                        bool count_include_pad, int64_t n, int64_t c, int64_t oh,
                                        int64_t ow) {
  const int64_t h0 = g.h.begin(oh), h1 = g.h.end(oh);
  const int64_t w0 = g.w.begin(ow), w1 = g.w.end(ow);
  Acc sum = 0;
  for (int64_t h = h0; h < h1; ++h)
    for (int64_t w = w0; w < w1; ++w) sum += static_cast<Acc>(in[s.at(n, c, h, w)]);
  return sum / static_cast<Acc>(avg_pool_divisor(g, count_include_pad, oh, ow));
}

template <class Acc, class T>
MINIDL_HOST_DEVICE Acc adaptive_avg_element(const T* in, const Strides4& s, const Adaptive2d& g,
                                            int64_t n, int64_t c, int64_t oh, int64_t ow) {
  const int64_t h0 = g.h.begin(oh), h1 = g.h.end(oh);
  const int64_t w0 = g.w.begin(ow), w1 = g.w.end(ow);
  Acc sum = 0;
  for (int64_t h = h0; h < h1; ++h)
    for (int64_t w = w0; w < w1; ++w) sum += static_cast<Acc>(in[s.at(n, c, h, w)]);
  return sum / static_cast<Acc>((h1 - h0) * (w1 - w0));
}

// ---- backward: the gradient of one input element (n, c, ih, iw) ----

// grad_output and indices are [N, C, out_h, out_w], each with its own strides.
template <class Acc, class T>
MINIDL_HOST_DEVICE Acc max_pool_grad_element(const T* grad_output, const Strides4& gs,
                                             const int64_t* indices, const Strides4& is,
                                             const Window2d& g, int64_t n, int64_t c, int64_t ih,
                                             int64_t iw) {
  const int64_t position = ih * g.w.in + iw;
  Acc sum = 0;
  for (int64_t oh = g.h.first_covering(ih); oh < g.h.end_covering(ih); ++oh)
    for (int64_t ow = g.w.first_covering(iw); ow < g.w.end_covering(iw); ++ow)
      if (indices[is.at(n, c, oh, ow)] == position)
        sum += static_cast<Acc>(grad_output[gs.at(n, c, oh, ow)]);
  return sum;
}

template <class Acc, class T>
MINIDL_HOST_DEVICE Acc avg_pool_grad_element(const T* grad_output, const Strides4& gs,
                                             const Window2d& g, bool count_include_pad, int64_t n,
                                             int64_t c, int64_t ih, int64_t iw) {
  Acc sum = 0;
  for (int64_t oh = g.h.first_covering(ih); oh < g.h.end_covering(ih); ++oh)
    for (int64_t ow = g.w.first_covering(iw); ow < g.w.end_covering(iw); ++ow)
      sum += static_cast<Acc>(grad_output[gs.at(n, c, oh, ow)]) /
             static_cast<Acc>(avg_pool_divisor(g, count_include_pad, oh, ow));
  return sum;
}

template <class Acc, class T>
MINIDL_HOST_DEVICE Acc adaptive_avg_grad_element(const T* grad_output, const Strides4& gs,
                                                 const Adaptive2d& g, int64_t n, int64_t c,
                                                 int64_t ih, int64_t iw) {
  Acc sum = 0;
  for (int64_t oh = g.h.first_covering(ih); oh < g.h.end_covering(ih); ++oh) {
    const int64_t window_h = g.h.end(oh) - g.h.begin(oh);
    for (int64_t ow = g.w.first_covering(iw); ow < g.w.end_covering(iw); ++ow) {
      const int64_t window_w = g.w.end(ow) - g.w.begin(ow);
      sum += static_cast<Acc>(grad_output[gs.at(n, c, oh, ow)]) /
             static_cast<Acc>(window_h * window_w);
    }
  }
  return sum;
}

}  // namespace minidl::pool
