// Softmax, log_softmax and the losses: validation, dispatch to the kernels of
// ops/loss_kernels.h, and backward. softmax, log_softmax, cross_entropy and nll_loss are
// primitives with their own backward kernels; mse_loss is composed of element-wise ops.
//
// Targets out of range: on the CPU a minidl::Error names the op, the bad value and C. On CUDA
// the targets stay on the device (checking them would synchronise the host), so the kernels
// turn an out-of-range target into a NaN loss and NaN gradients for that row, which the
// reduced loss and GradScaler's inf/NaN check then show.
#include "minidl/ops/loss.h"

#include <utility>

#include "minidl/core/autograd/function.h"
#include "minidl/core/dispatch.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/autocast_policy.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/loss_kernels.h"
#include "minidl/ops/reduce.h"

namespace minidl {

namespace {

// Per-row losses and logsumexp are float32, or float64 for float64 inputs.
DType acc_dtype(DType dtype) { return dtype == kFloat64 ? kFloat64 : kFloat32; }

// A contiguous tensor viewed as [outer, C, inner] around `dim`, the softmax kernels' layout.
Tensor rows_around(const Tensor& contiguous, int64_t dim) {
  int64_t outer = 1, classes = 1, inner = 1;
  for (int64_t d = 0; d < contiguous.dim(); ++d)
    (d < dim ? outer : d == dim ? classes : inner) *= contiguous.size(d);
  const Shape sizes{outer, classes, inner};
  return make_view(contiguous, sizes, contiguous_strides(sizes), contiguous.storage_offset());
}

void check_floating(const Tensor& x, const char* op, const char* what) {
  MINIDL_CHECK(x.is_floating_point(), op, ": expected ", what, " to be floating-point (float32, ",
               "float64, float16 or bfloat16), got ", x.dtype());
}

// softmax (kLog false) or log_softmax of x over `dim`.
template <bool kLog>
Tensor softmax_impl(const Tensor& x, int64_t dim) {
  const char* op = kLog ? "log_softmax" : "softmax";
  check_defined(x, op, "input");
  check_floating(x, op, "the input");
  const int64_t d = wrap_dim(dim, x.dim(), op);  // a 0-d tensor is one row of one class
  Tensor input;
  {
    NoGradGuard no_grad;
    input = x.contiguous();
  }
  Tensor out = empty(x.sizes(), x.options());
  if (x.numel() > 0) {
    const LossKernels& kernels = kernels_for<LossKernels>(x.device());
    (kLog ? kernels.log_softmax : kernels.softmax)(rows_around(out, d), rows_around(input, d));
  }
  if (autograd::needs_grad({x})) {
    autograd::SavedTensor saved_out = autograd::SavedTensor::output(out, op);
    autograd::record(
        out, kLog ? "LogSoftmaxBackward" : "SoftmaxBackward", {x},
        [saved_out, d](const Tensor& grad) {
          const Tensor y = saved_out.get();
          if (GradMode::is_enabled()) {
            // create_graph: PyTorch's formulas as recorded ops, differentiable
            // again (y is rebuilt with this node as its grad_fn).
            const Shape dims{d};
            if (kLog) return std::vector<Tensor>{grad - exp(y) * sum(grad, dims, true)};
            return std::vector<Tensor>{y * (grad - sum(grad * y, dims, true))};
          }
          Tensor grad_input = empty(y.sizes(), y.options());
          if (y.numel() > 0) {
            const LossKernels& kernels = kernels_for<LossKernels>(y.device());
            (kLog ? kernels.log_softmax_backward : kernels.softmax_backward)(
                rows_around(grad_input, d), rows_around(grad.contiguous(), d), rows_around(y, d));
          }
          return std::vector<Tensor>{grad_input};
        },
        autograd::DoubleBackward::kSupported);
  }
  return out;
}

// How many rows a Mean reduction divides by: those whose target is not ignore_index. On the
// CPU the check has read the targets, so the count is known (undefined `count` when no row is
// ignored: the plain mean); on CUDA it stays a device tensor, since reading it would synchronise.
struct CountedRows {
  int64_t rows = 0;
  Tensor count;  // 0-d, of the accumulation dtype; undefined: all rows count
};

// input [N, C] floating, target int64 [N] on the same device with values in [0, C) or equal to
// ignore_index (checked here for CPU targets; see the note at the top for CUDA). Returns the
// rows a mean counts.
CountedRows check_class_target(const char* op, const Tensor& input, const char* input_name,
                               const Tensor& target, int64_t ignore_index, Reduction reduction) {
  check_defined(input, op, input_name);
  check_defined(target, op, "target");
  check_floating(input, op, input_name);
  MINIDL_CHECK(input.dim() == 2, op, ": expected ", input_name, " of shape [N, C], got shape ",
               input.sizes());
  MINIDL_CHECK(target.dtype() == kInt64, op, ": expected target of dtype int64 (class indices), ",
               "got ", target.dtype());
  MINIDL_CHECK(target.dim() == 1 && target.size(0) == input.size(0), op, ": expected target of ",
               "shape [", input.size(0), "] for ", input_name, " of shape ", input.sizes(),
               ", got target of shape ", target.sizes());
  MINIDL_CHECK(target.device() == input.device(), op, ": expected target on ", input.device(),
               " like ", input_name, ", got target on ", target.device());
  const int64_t classes = input.size(1);
  MINIDL_CHECK(classes > 0 || input.size(0) == 0, op, ": expected at least one class, got ",
               input_name, " of shape ", input.sizes());
  const TensorOptions acc_options = TensorOptions(acc_dtype(input.dtype())).device(input.device());
  CountedRows counted{input.size(0), Tensor()};
  if (!target.is_cpu()) {
    if (reduction != Reduction::Mean) return counted;
    NoGradGuard no_grad;
    counted.count = sum(ne(target, static_cast<double>(ignore_index))).to(acc_options.dtype());
    return counted;
  }
  const std::vector<int64_t> values = to_vector<int64_t>(target);
  int64_t ignored = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] == ignore_index) {
      ++ignored;
      continue;
    }
    MINIDL_CHECK(values[i] >= 0 && values[i] < classes, op, ": target ", values[i], " at index ", i,
                 " is out of range for ", classes, " classes (expected 0 <= target < ", classes,
                 ", or ignore_index ", ignore_index, ")");
  }
  if (ignored > 0)
    counted.count = scalar_tensor(static_cast<double>(counted.rows - ignored), acc_options);
  return counted;
}

// Per-row losses [N] (acc dtype) reduced as asked, in `dtype`; a mean divides by the counted
// rows (ignored rows hold loss 0).
Tensor reduce_losses(const Tensor& losses, Reduction reduction, const CountedRows& counted,
                     DType dtype) {
  NoGradGuard no_grad;
  switch (reduction) {
    case Reduction::None: return losses.to(dtype);
    case Reduction::Sum: return sum(losses).to(dtype);
    case Reduction::Mean:
      return (counted.count.defined() ? div(sum(losses), counted.count) : mean(losses)).to(dtype);
  }
  MINIDL_INTERNAL_ASSERT(false, "unknown Reduction");
  return {};
}

// The gradient of the reduced loss as one value per row ([N], stride 0 when reduced), and the
// factor each row's gradient carries (1/N for a mean over all rows; for a mean over counted
// rows the division is done here, on the device, and the factor is 1).
std::pair<Tensor, double> per_row_grad(const Tensor& grad, Reduction reduction,
                                       const CountedRows& counted) {
  if (reduction == Reduction::None) return {grad.contiguous(), 1.0};
  const Tensor row_grad = grad.reshape({1});
  if (reduction == Reduction::Sum) return {row_grad.expand({counted.rows}), 1.0};
  if (counted.count.defined())
    return {div(row_grad.to(counted.count.dtype()), counted.count)
                .to(grad.dtype())
                .expand({counted.rows}),
            1.0};
  return {row_grad.expand({counted.rows}), 1.0 / static_cast<double>(counted.rows)};
}

// The gradient of the per-row losses of cross_entropy (`probabilities` = softmax of the logits,
// with label smoothing `smoothing`) or, with undefined `probabilities`, of nll_loss, for the
// rows' gradients `grad_rows` [N] times `scale`, as recorded ops: the formulas a backward pass with
// create_graph differentiates again. Rows whose target is ignore_index get none.
Tensor class_loss_gradient(const Tensor& probabilities, const Tensor& target, int64_t classes,
                           double smoothing, int64_t ignore_index, const Tensor& grad_rows,
                           double scale) {
  const Tensor positions =
      arange(static_cast<double>(classes), TensorOptions(kInt64).device(target.device()))
          .reshape({1, classes});
  const Tensor column = target.unsqueeze(1);
  const Tensor one_hot = (positions == column).to(grad_rows.dtype());
  const Tensor row_factor = (grad_rows * scale).unsqueeze(1);
  const Tensor per_class = probabilities.defined()
                               ? (probabilities - (one_hot * (1.0 - smoothing) +
                                                   smoothing / static_cast<double>(classes))) *
                                     row_factor
                               : -one_hot * row_factor;
  return where(ne(column, static_cast<double>(ignore_index)), per_class, 0.0);
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) {
  if (amp::AutocastCall cast{amp::AutocastOp::Softmax, {x}}) return softmax(cast[0], dim);
  const ProfileScope profile("softmax", {x});
  return softmax_impl<false>(x, dim);
}

Tensor log_softmax(const Tensor& x, int64_t dim) {
  if (amp::AutocastCall cast{amp::AutocastOp::LogSoftmax, {x}}) return log_softmax(cast[0], dim);
  const ProfileScope profile("log_softmax", {x});
  return softmax_impl<true>(x, dim);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction,
                     double label_smoothing, int64_t ignore_index) {
  if (amp::AutocastCall cast{amp::AutocastOp::CrossEntropy, {logits}})
    return cross_entropy(cast[0], target, reduction, label_smoothing, ignore_index);
  const ProfileScope profile("cross_entropy", {logits, target});
  const CountedRows counted =
      check_class_target("cross_entropy", logits, "logits", target, ignore_index, reduction);
  MINIDL_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0, "cross_entropy: expected ",
               "label_smoothing in [0, 1], got ", label_smoothing);
  // Recorded (a copy only for non-contiguous logits), so that the saved logits keep their place
  // in the graph for a backward pass with create_graph.
  const Tensor x = logits.contiguous();
  Tensor t;
  {
    NoGradGuard no_grad;
    t = target.contiguous();
  }
  const int64_t rows = x.size(0);
  const TensorOptions acc_options = TensorOptions(acc_dtype(x.dtype())).device(x.device());
  Tensor losses = empty({rows}, acc_options);
  Tensor logsumexp = empty({rows}, acc_options);
  if (rows > 0)
    kernels_for<LossKernels>(x.device())
        .cross_entropy_forward(losses, logsumexp, x, t, ignore_index, label_smoothing);
  Tensor out = reduce_losses(losses, reduction, counted, x.dtype());
  if (autograd::needs_grad({logits})) {
    autograd::SavedTensor saved_logits(x, "cross_entropy");
    autograd::SavedTensor saved_target(t, "cross_entropy");
    autograd::record(
        out, "CrossEntropyBackward", {logits},
        [saved_logits, saved_target, logsumexp, reduction, label_smoothing, ignore_index,
         counted](const Tensor& grad) {
          const Tensor x = saved_logits.get();
          if (GradMode::is_enabled() && x.numel() > 0) {  // create_graph
            auto [grad_rows, scale] = per_row_grad(grad, reduction, counted);
            return std::vector<Tensor>{class_loss_gradient(softmax(x, 1), saved_target.get(),
                                                           x.size(1), label_smoothing, ignore_index,
                                                           grad_rows, scale)};
          }
          Tensor grad_logits = empty(x.sizes(), x.options());
          if (x.numel() == 0) return std::vector<Tensor>{grad_logits};
          auto [grad_rows, scale] = per_row_grad(grad, reduction, counted);
          kernels_for<LossKernels>(x.device())
              .cross_entropy_backward(grad_logits, grad_rows, scale, x, saved_target.get(),
                                      ignore_index, logsumexp, label_smoothing);
          return std::vector<Tensor>{grad_logits};
        },
        autograd::DoubleBackward::kSupported);
  }
  return out;
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, Reduction reduction,
                int64_t ignore_index) {
  if (amp::AutocastCall cast{amp::AutocastOp::NllLoss, {log_probs}})
    return nll_loss(cast[0], target, reduction, ignore_index);
  const ProfileScope profile("nll_loss", {log_probs, target});
  const CountedRows counted =
      check_class_target("nll_loss", log_probs, "log_probs", target, ignore_index, reduction);
  Tensor x, t;
  {
    NoGradGuard no_grad;
    x = log_probs.contiguous();
    t = target.contiguous();
  }
  const int64_t rows = x.size(0);
  Tensor losses = empty({rows}, TensorOptions(acc_dtype(x.dtype())).device(x.device()));
  if (rows > 0) kernels_for<LossKernels>(x.device()).nll_loss_forward(losses, x, t, ignore_index);
  Tensor out = reduce_losses(losses, reduction, counted, x.dtype());
  if (autograd::needs_grad({log_probs})) {
    autograd::SavedTensor saved_target(t, "nll_loss");
    const Shape& input_sizes = x.sizes();
    const TensorOptions input_options = x.options();
    autograd::record(
        out, "NllLossBackward", {log_probs},
        [saved_target, input_sizes, input_options, reduction, ignore_index,
         counted](const Tensor& grad) {
          if (GradMode::is_enabled() && shape_numel(input_sizes) > 0) {
            // create_graph: linear in grad, as recorded ops
            auto [grad_rows, scale] = per_row_grad(grad, reduction, counted);
            return std::vector<Tensor>{class_loss_gradient(
                Tensor(), saved_target.get(), input_sizes[1], 0.0, ignore_index, grad_rows, scale)};
          }
          Tensor grad_input = empty(input_sizes, input_options);
          if (grad_input.numel() == 0) return std::vector<Tensor>{grad_input};
          auto [grad_rows, scale] = per_row_grad(grad, reduction, counted);
          kernels_for<LossKernels>(grad_input.device())
              .nll_loss_backward(grad_input, grad_rows, scale, saved_target.get(), ignore_index);
          return std::vector<Tensor>{grad_input};
        },
        autograd::DoubleBackward::kSupported);
  }
  return out;
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  if (amp::AutocastCall cast{amp::AutocastOp::MseLoss, {input, target}})
    return mse_loss(cast[0], cast[1], reduction);
  const ProfileScope profile("mse_loss", {input, target});
  check_defined(input, "mse_loss", "input");
  check_defined(target, "mse_loss", "target");
  check_floating(input, "mse_loss", "input");
  MINIDL_CHECK(input.sizes() == target.sizes(), "mse_loss: expected target of the input's shape ",
               input.sizes(), ", got target of shape ", target.sizes());
  MINIDL_CHECK(input.dtype() == target.dtype(), "mse_loss: expected target of the input's dtype ",
               input.dtype(), ", got target of dtype ", target.dtype());
  MINIDL_CHECK(input.device() == target.device(), "mse_loss: expected target on ", input.device(),
               " like the input, got target on ", target.device());
  Tensor difference = sub(input, target);
  Tensor squared = mul(difference, difference);
  switch (reduction) {
    case Reduction::None: return squared;
    case Reduction::Sum: return sum(squared);
    case Reduction::Mean: return mean(squared);
  }
  MINIDL_INTERNAL_ASSERT(false, "unknown Reduction");
  return {};
}

}  // namespace minidl
