#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

#include "minidl/core/parallel.h"
#include "minidl/ops/cpu/cross_entropy_rows.h"
#include "minidl/ops/loss_kernels.h"
#include "minidl/ops/loss_math.h"

namespace minidl::cpu {

namespace {

// float for float32 and the 16-bit types, double for float64.
template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// One softmax row: element c sits at data[base + c * stride].
struct Row {
  int64_t base, stride;
};

// How many rows of `classes` elements one parallel_for task takes.
inline int64_t row_grain(int64_t classes) {
  return std::max<int64_t>(1, kDefaultGrain / std::max<int64_t>(classes, 1));
}

// Calls fn(row) for every (outer, inner) row of the [outer, C, inner] tensor x, in parallel.
template <class Fn>
void for_each_row(const Tensor& x, const Fn& fn) {
  MINIDL_INTERNAL_ASSERT(x.dim() == 3 && (x.numel() == 0 || x.is_contiguous()),
                         "softmax kernels take a contiguous [outer, C, inner] tensor");
  const int64_t classes = x.size(1), inner = x.size(2);
  const int64_t rows = x.size(0) * inner;
  parallel_for(0, rows, row_grain(classes), [&](int64_t lo, int64_t hi) {
    for (int64_t row = lo; row < hi; ++row)
      fn(Row{(row / inner) * classes * inner + row % inner, inner});
  });
}

// max_c x[c] and log(sum_c exp(x[c] - max)), in Acc.
template <class Acc, class T>
std::pair<Acc, Acc> max_and_log_sum_exp(const T* x, Row row, int64_t classes) {
  Acc max = -std::numeric_limits<Acc>::infinity();
  for (int64_t c = 0; c < classes; ++c)
    max = std::max(max, static_cast<Acc>(x[row.base + c * row.stride]));
  Acc sum = 0;
  for (int64_t c = 0; c < classes; ++c)
    sum += std::exp(static_cast<Acc>(x[row.base + c * row.stride]) - max);
  return {max, std::log(sum)};
}

template <bool kLog>
void softmax_forward(const Tensor& out, const Tensor& x) {
  visit_floating(x.dtype(), kLog ? "log_softmax" : "softmax", [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    const T* in = x.data_ptr<T>();
    T* result = out.data_ptr<T>();
    const int64_t classes = x.size(1);
    for_each_row(x, [&](Row row) {
      if constexpr (!kLog && std::is_same_v<T, Acc>) {
        // float and double outputs hold exp(x - max) exactly as computed, so softmax can
        // store them and rescale instead of computing every exp twice.
        Acc max = -std::numeric_limits<Acc>::infinity();
        for (int64_t c = 0; c < classes; ++c) max = std::max(max, in[row.base + c * row.stride]);
        Acc sum = 0;
        for (int64_t c = 0; c < classes; ++c) {
          const int64_t at = row.base + c * row.stride;
          result[at] = std::exp(in[at] - max);
          sum += result[at];
        }
        const Acc inverse = 1 / sum;
        for (int64_t c = 0; c < classes; ++c) result[row.base + c * row.stride] *= inverse;
        return;
      }
      const auto [max, log_sum] = max_and_log_sum_exp<Acc>(in, row, classes);
      for (int64_t c = 0; c < classes; ++c) {
        const int64_t at = row.base + c * row.stride;
        const Acc shifted = static_cast<Acc>(in[at]) - max - log_sum;
        result[at] = static_cast<T>(kLog ? shifted : std::exp(shifted));
      }
    });
  });
}

// softmax's backward, grad_input = y * (g - sum_c g * y), or with kLog log_softmax's,
// grad_input = g - exp(y) * sum_c g, where y is the forward's output.
template <bool kLog>
void softmax_backward(const Tensor& grad_input, const Tensor& grad, const Tensor& output) {
  const char* what = kLog ? "log_softmax backward" : "softmax backward";
  visit_floating(output.dtype(), what, [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    const T* g = grad.data_ptr<T>();
    const T* y = output.data_ptr<T>();
    T* result = grad_input.data_ptr<T>();
    const int64_t classes = output.size(1);
    for_each_row(output, [&](Row row) {
      Acc sum = 0;  // sum_c g with kLog, sum_c g * y without
      for (int64_t c = 0; c < classes; ++c) {
        const int64_t at = row.base + c * row.stride;
        if constexpr (kLog)
          sum += static_cast<Acc>(g[at]);
        else
          sum += static_cast<Acc>(g[at]) * static_cast<Acc>(y[at]);
      }
      for (int64_t c = 0; c < classes; ++c) {
        const int64_t at = row.base + c * row.stride;
        if constexpr (kLog)
          result[at] =
              static_cast<T>(static_cast<Acc>(g[at]) - std::exp(static_cast<Acc>(y[at])) * sum);
        else
          result[at] = static_cast<T>(static_cast<Acc>(y[at]) * (static_cast<Acc>(g[at]) - sum));
      }
    });
  });
}

template <class T>
T load_grad(const Tensor& grad_losses, const T* data, int64_t i) {
  return data[i * grad_losses.stride(0)];
}

void softmax_kernel(const Tensor& out, const Tensor& x) { softmax_forward<false>(out, x); }

void log_softmax_kernel(const Tensor& out, const Tensor& x) { softmax_forward<true>(out, x); }

void softmax_backward_kernel(const Tensor& grad_input, const Tensor& grad, const Tensor& output) {
  softmax_backward<false>(grad_input, grad, output);
}

void log_softmax_backward_kernel(const Tensor& grad_input, const Tensor& grad,
                                 const Tensor& output) {
  softmax_backward<true>(grad_input, grad, output);
}

void cross_entropy_forward_kernel(const Tensor& losses, const Tensor& logsumexp,
                                  const Tensor& logits, const Tensor& target, int64_t ignore_index,
                                  double label_smoothing) {
  visit_floating(logits.dtype(), "cross_entropy", [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    const T* x = logits.data_ptr<T>();
    const int64_t* t = target.data_ptr<int64_t>();
    Acc* loss = losses.data_ptr<Acc>();
    Acc* lse = logsumexp.data_ptr<Acc>();
    const int64_t rows = logits.size(0), classes = logits.size(1);
    const Acc smoothing = static_cast<Acc>(label_smoothing);
    parallel_for(0, rows, row_grain(classes), [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const Row row{i * classes, 1};
        if constexpr (std::is_same_v<T, float>) {
          lse[i] = log_sum_exp_row(x + row.base, classes);
        } else {
          const auto [max, log_sum] = max_and_log_sum_exp<Acc>(x, row, classes);
          lse[i] = max + log_sum;
        }
        // Only label smoothing reads the logits' sum: without it, a -inf logit (a masked class)
        // must not turn the loss into 0 * -inf = NaN, as the CUDA kernel and PyTorch agree.
        Acc logit_sum = 0;
        if (smoothing != Acc(0))
          for (int64_t c = 0; c < classes; ++c) logit_sum += static_cast<Acc>(x[row.base + c]);
        loss[i] = t[i] == ignore_index ? Acc(0)
                                       : loss_math::smoothed_cross_entropy(
                                             lse[i], static_cast<Acc>(x[row.base + t[i]]),
                                             logit_sum, smoothing, classes);
      }
    });
  });
}

void cross_entropy_backward_kernel(const Tensor& grad_logits, const Tensor& grad_losses,
                                   double scale, const Tensor& logits, const Tensor& target,
                                   int64_t ignore_index, const Tensor& logsumexp,
                                   double label_smoothing) {
  visit_floating(logits.dtype(), "cross_entropy backward", [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    const T* x = logits.data_ptr<T>();
    const T* g = grad_losses.data_ptr<T>();
    const int64_t* t = target.data_ptr<int64_t>();
    const Acc* lse = logsumexp.data_ptr<Acc>();
    T* result = grad_logits.data_ptr<T>();
    const int64_t rows = logits.size(0), classes = logits.size(1);
    const Acc smoothing = static_cast<Acc>(label_smoothing);
    const Acc off_target = smoothing / static_cast<Acc>(classes);
    parallel_for(0, rows, row_grain(classes), [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        if (t[i] == ignore_index) {
          std::fill_n(result + i * classes, classes, T(0.0f));
          continue;
        }
        const Acc row_grad =
            static_cast<Acc>(scale) * static_cast<Acc>(load_grad(grad_losses, g, i));
        if constexpr (std::is_same_v<T, float>) {
          cross_entropy_grad_row(x + i * classes, classes, lse[i], t[i], smoothing, row_grad,
                                 result + i * classes);
          continue;
        }
        for (int64_t c = 0; c < classes; ++c) {
          const Acc probability = std::exp(static_cast<Acc>(x[i * classes + c]) - lse[i]);
          const Acc wanted = loss_math::smoothed_target(c == t[i], smoothing, off_target);
          result[i * classes + c] = static_cast<T>(row_grad * (probability - wanted));
        }
      }
    });
  });
}

void nll_loss_forward_kernel(const Tensor& losses, const Tensor& log_probs, const Tensor& target,
                             int64_t ignore_index) {
  visit_floating(log_probs.dtype(), "nll_loss", [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    const T* lp = log_probs.data_ptr<T>();
    const int64_t* t = target.data_ptr<int64_t>();
    Acc* loss = losses.data_ptr<Acc>();
    const int64_t classes = log_probs.size(1);
    parallel_for(0, log_probs.size(0), kDefaultGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        loss[i] = t[i] == ignore_index ? Acc(0) : -static_cast<Acc>(lp[i * classes + t[i]]);
    });
  });
}

void nll_loss_backward_kernel(const Tensor& grad_log_probs, const Tensor& grad_losses, double scale,
                              const Tensor& target, int64_t ignore_index) {
  visit_floating(grad_log_probs.dtype(), "nll_loss backward", [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    const T* g = grad_losses.data_ptr<T>();
    const int64_t* t = target.data_ptr<int64_t>();
    T* result = grad_log_probs.data_ptr<T>();
    const int64_t rows = grad_log_probs.size(0), classes = grad_log_probs.size(1);
    parallel_for(0, rows, row_grain(classes), [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const T row_grad = static_cast<T>(-static_cast<Acc>(scale) *
                                          static_cast<Acc>(load_grad(grad_losses, g, i)));
        for (int64_t c = 0; c < classes; ++c)
          result[i * classes + c] = c == t[i] && t[i] != ignore_index ? row_grad : T(0.0f);
      }
    });
  });
}

}  // namespace

}  // namespace minidl::cpu

namespace minidl {

const LossKernels LossKernels::kCpu{
    .softmax = cpu::softmax_kernel,
    .log_softmax = cpu::log_softmax_kernel,
    .softmax_backward = cpu::softmax_backward_kernel,
    .log_softmax_backward = cpu::log_softmax_backward_kernel,
    .cross_entropy_forward = cpu::cross_entropy_forward_kernel,
    .cross_entropy_backward = cpu::cross_entropy_backward_kernel,
    .nll_loss_forward = cpu::nll_loss_forward_kernel,
    .nll_loss_backward = cpu::nll_loss_backward_kernel,
};

}  // namespace minidl
