// Batch normalisation: validation, dtype and layout staging, dispatch to the kernels of
// ops/norm_kernels.h, and backward. The math is in ops/norm_math.h.
//
// The kernels see one accumulation dtype (Acc: float32, or float64 for float64 input) for
// every per-channel tensor. Parameters of another dtype (float16 weights under a float16 input)
// are converted on the way in, and their gradients converted back; running statistics that had
// to be converted (or were not contiguous) are updated in a staging copy and written back.
#include "minidl/ops/norm.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>
#include <utility>

#include "minidl/core/autograd/function.h"
#include "minidl/core/cuda/build.h"
#include "minidl/core/dispatch.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/conv.h"
#include "minidl/ops/cpu/onednn_batch_norm.h"
#include "minidl/ops/cuda/batch_norm_cudnn.h"
#include "minidl/ops/cuda_batch_norm_implementations.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/elementwise_kernels.h"
#include "minidl/ops/elementwise_op.h"
#include "minidl/ops/norm_kernels.h"

namespace minidl {

namespace {

constexpr const char* kOp = "batch_norm";

DType acc_dtype(DType dtype) { return dtype == kFloat64 ? kFloat64 : kFloat32; }

bool is_16_bit(DType dtype) { return dtype == kFloat16 || dtype == kBFloat16; }

// A per-channel tensor (weight, bias, running statistic): [C], on the input's device, of the
// input's dtype or (for 16-bit input) float32.
void check_per_channel(const Tensor& t, const char* name, const Tensor& input) {
  if (!t.defined()) return;
  const int64_t channels = input.size(1);
  MINIDL_CHECK(t.dim() == 1 && t.size(0) == channels, kOp, ": expected ", name, " of shape [",
               channels, "] (one value per channel of the input of shape ", input.sizes(),
               "), got shape ", t.sizes());
  MINIDL_CHECK(t.device() == input.device(), kOp, ": expected ", name, " on ", input.device(),
               " like the input, got ", name, " on ", t.device());
  if (is_16_bit(input.dtype())) {
    MINIDL_CHECK(t.dtype() == input.dtype() || t.dtype() == kFloat32, kOp, ": expected ", name,
                 " of dtype ", input.dtype(), " or float32 (the input is ", input.dtype(),
                 "), got ", t.dtype());
  } else {
    MINIDL_CHECK(t.dtype() == input.dtype(), kOp, ": expected ", name, " of dtype ", input.dtype(),
                 " like the input, got ", t.dtype());
  }
}

void check_arguments(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                     const Tensor& weight, const Tensor& bias, bool training, double momentum,
                     double eps) {
  check_defined(input, kOp, "input");
  MINIDL_CHECK(input.dim() >= 2 && input.dim() <= 4, kOp, ": expected an input of shape [N, C], ",
               "[N, C, L] or [N, C, H, W], got shape ", input.sizes());
  MINIDL_CHECK(input.is_floating_point(), kOp, ": expected a floating-point input (float32, ",
               "float64, float16 or bfloat16), got ", input.dtype());
  check_per_channel(running_mean, "running_mean", input);
  check_per_channel(running_var, "running_var", input);
  check_per_channel(weight, "weight", input);
  check_per_channel(bias, "bias", input);
  MINIDL_CHECK(running_mean.defined() == running_var.defined(), kOp, ": expected running_mean ",
               "and running_var both defined or both undefined, got only ",
               running_mean.defined() ? "running_mean" : "running_var");
  MINIDL_CHECK(training || running_mean.defined(), kOp, ": evaluation (training = false) ",
               "normalises with running_mean and running_var, but they are undefined");
  MINIDL_CHECK(std::isfinite(momentum) && momentum >= 0.0 && momentum <= 1.0, kOp,
               ": expected momentum in [0, 1], got ", momentum);
  MINIDL_CHECK(std::isfinite(eps) && eps >= 0.0, kOp, ": expected eps >= 0, got ", eps);
  if (training) {
    const int64_t per_channel = input.numel() / std::max<int64_t>(input.size(1), 1);
    MINIDL_CHECK(per_channel > 1 || input.size(1) == 0, kOp, ": expected more than 1 value per ",
                 "channel when training, got input of shape ", input.sizes());
  }
  for (const Tensor* running : {&running_mean, &running_var})
    if (running->defined()) autograd::check_inplace(*running, kOp);
}

// The [N, C, S] view of `x`, dense in `format` (see norm::ChannelLayout).
norm::ChannelLayout layout_of(const Tensor& x, MemoryFormat format) {
  const int64_t batch = x.size(0), channels = x.size(1);
  int64_t spatial = 1;
  for (int64_t d = 2; d < x.dim(); ++d) spatial *= x.size(d);
  if (format == MemoryFormat::ChannelsLast)
    return {batch, channels, spatial, spatial * channels, 1, channels};
  return {batch, channels, spatial, channels * spatial, spatial, 1};
}

// `t` as the kernels want it: contiguous, of dtype `acc` (undefined stays undefined).
Tensor as_acc(const Tensor& t, DType acc) {
  if (!t.defined()) return t;
  NoGradGuard no_grad;
  return t.to(acc).contiguous();
}

// A running statistic the kernels update in place: the user's tensor itself when it is
// contiguous and of the accumulation dtype, else a staging copy written back by commit().
class RunningStatistic {
 public:
  RunningStatistic(const Tensor& user, DType acc) : user_(user), work_(as_acc(user, acc)) {}
  const Tensor& get() const { return work_; }
  void commit() {
    if (!user_.defined()) return;
    if (work_.is_same(user_)) {
      user_.bump_version();
    } else {
      NoGradGuard no_grad;
      user_.copy_(work_);
    }
  }

 private:
  Tensor user_;
  Tensor work_;
};

struct ChannelStatistics {
  Tensor mean;      // [C], Acc
  Tensor invstd;    // [C], Acc
  Tensor variance;  // [C], float32: oneDNN's biased variance, for its backward (else undefined)
};

ChannelStatistics batch_statistics(const Tensor& x, const norm::ChannelLayout& layout,
                                   const Tensor& running_mean, const Tensor& running_var,
                                   double momentum, double eps) {
  const DType acc = acc_dtype(x.dtype());
  const TensorOptions acc_options = TensorOptions(acc).device(x.device());
  ChannelStatistics stats{empty({layout.channels}, acc_options),
                          empty({layout.channels}, acc_options), Tensor()};
  RunningStatistic staged_mean(running_mean, acc), staged_var(running_var, acc);
  if (layout.numel() > 0) {
    kernels_for<NormKernels>(x.device())
        .batch_norm_statistics(stats.mean, stats.invstd, staged_mean.get(), staged_var.get(), x,
                               layout, momentum, eps);
    staged_mean.commit();
    staged_var.commit();
  }
  return stats;
}

// The output and statistics of a training step on oneDNN (ops/cpu/onednn_batch_norm.h), with the
// running statistics updated, where it takes the input (channels-last on the CPU, float32 or
// bfloat16: ops/cpu/onednn_batch_norm.h).
std::optional<std::pair<Tensor, ChannelStatistics>> onednn_training(
    const Tensor& x, MemoryFormat format, const Tensor& running_mean, const Tensor& running_var,
    const Tensor& weight, const Tensor& bias, double momentum, double eps) {
  if (!x.is_cpu() || format != MemoryFormat::ChannelsLast) return std::nullopt;
  RunningStatistic staged_mean(running_mean, kFloat32), staged_var(running_var, kFloat32);
  auto result = cpu::onednn_batch_norm_forward(x, weight, bias, staged_mean.get(), staged_var.get(),
                                               momentum, eps);
  if (!result) return std::nullopt;
  staged_mean.commit();
  staged_var.commit();
  return std::pair{result->output,
                   ChannelStatistics{result->mean, result->invstd, result->variance}};
}

// A training step on cuDNN (ops/cuda/batch_norm_cudnn.h) where MINIDL_CUDA_BATCH_NORM selects
// it (ops/cuda_batch_norm_implementations.h), deterministic mode is off and cuDNN takes the
// input; with `relu`, the sum and the ReLU inside where saved.ops says so. The running
// statistics are updated. The cuda:: functions are named only in branches a CPU-only build
// discards (core/cuda/build.h).
std::optional<cuda::CudnnBatchNormForward> cudnn_training(const Tensor& x, MemoryFormat format,
                                                          const Tensor& running_mean,
                                                          const Tensor& running_var,
                                                          const Tensor& weight, const Tensor& bias,
                                                          double momentum, double eps,
                                                          const Tensor& residual, bool relu) {
  if constexpr (cuda::kBuilt) {
    if (!x.is_cuda() || format != MemoryFormat::ChannelsLast ||
        cuda_batch_norm() != CudaBatchNorm::Cudnn || cudnn_deterministic() ||
        !running_mean.defined() || !cuda::cudnn_batch_norm_fits(x, weight, bias))
      return std::nullopt;
    NoGradGuard no_grad;  // the residual's layout copy, if any, is no op of the graph
    RunningStatistic staged_mean(running_mean, kFloat32), staged_var(running_var, kFloat32);
    std::optional<cuda::CudnnBatchNormForward> result = cuda::cudnn_batch_norm_forward(
        x, weight, bias, staged_mean.get(), staged_var.get(), momentum, eps, residual, relu);
    if (!result) return std::nullopt;
    staged_mean.commit();
    staged_var.commit();
    return result;
  } else {
    return std::nullopt;
  }
}

// Copies of the running statistics as mean and invstd (copies, so a later training step that
// updates the running statistics in place does not change what this step's backward uses).
ChannelStatistics running_statistics(const Tensor& running_mean, const Tensor& running_var,
                                     DType acc, double eps) {
  NoGradGuard no_grad;
  return {running_mean.to(acc).clone(), 1.0 / (running_var.to(acc) + eps).sqrt(), Tensor()};
}

// out = the normalised x; with `relu`, relu(that + residual) in the same pass (residual dense
// in the layout, or undefined).
void apply(const Tensor& out, const Tensor& x, const ChannelStatistics& stats, const Tensor& weight,
           const Tensor& bias, const norm::ChannelLayout& layout, const Tensor& residual,
           bool relu) {
  if (layout.numel() == 0) return;
  kernels_for<NormKernels>(x.device())
      .batch_norm_apply(out, x, stats.mean, stats.invstd, weight, bias, layout, residual, relu);
}

// out = relu(out + residual) in place, with the kernels add and relu use, in the same order:
// for an output that oneDNN normalised.
void add_relu_in_place(const Tensor& out, const Tensor& residual) {
  if (out.numel() == 0) return;
  auto& kernels = kernels_for<ElementwiseKernels>(out.device());
  if (residual.defined()) kernels.binary(elementwise::BinaryOp::Add, out, out, residual, 1.0);
  kernels.unary(elementwise::UnaryOp::Relu, out, out, {});
}

// What backward keeps, and which gradients it owes.
struct BackwardState {
  autograd::SavedTensor input;   // dense in `format`
  autograd::SavedTensor weight;  // Acc, contiguous; undefined without affine weight
  ChannelStatistics stats;
  norm::ChannelLayout layout;
  MemoryFormat format;
  norm::Statistics statistics;
  double eps;
  bool has_bias;
  DType weight_dtype, bias_dtype;
  bool input_needs_grad, weight_needs_grad, bias_needs_grad;
  // Where the forward pass ran on cuDNN: what its backward needs, and the bias (Acc), which
  // cuDNN's backward of a fused ReLU reads.
  std::optional<cuda::CudnnBatchNormSaved> cudnn;
  autograd::SavedTensor bias;
};

// The gradients on cuDNN, for a forward pass that ran there (state.cudnn): input, weight, bias
// and, for cuDNN's fused sum, the residual. grad is the output's; relu_output the fused ReLU's
// output (cuDNN masks grad with it), undefined for cuDNN's plain batch norm.
std::vector<Tensor> cudnn_backward(const BackwardState& state, const Tensor& grad,
                                   const Tensor& relu_output) {
  if constexpr (cuda::kBuilt) {
    const cuda::CudnnBatchNormGradients grads =
        cuda::cudnn_batch_norm_backward(grad, state.input.get(), relu_output, state.weight.get(),
                                        state.bias.get(), *state.cudnn, state.eps);
    return {state.input_needs_grad ? grads.input : Tensor(),
            state.weight_needs_grad ? grads.weight.to(state.weight_dtype) : Tensor(),
            state.bias_needs_grad ? grads.bias.to(state.bias_dtype) : Tensor(), grads.residual};
  } else {
    MINIDL_INTERNAL_ASSERT(false, "batch_norm: a cuDNN backward in a build without CUDA");
    return {};
  }
}

// The gradients on oneDNN, for a forward pass that ran on it (stats.variance defined); nullopt
// where it does not take them (switched off since), and minidl's kernels compute them.
std::optional<std::vector<Tensor>> onednn_backward(const BackwardState& state, const Tensor& dy,
                                                   const Tensor& weight) {
  if (!state.stats.variance.defined()) return std::nullopt;
  const auto result =
      cpu::onednn_batch_norm_backward(dy, state.input.get(), state.stats.mean, state.stats.variance,
                                      weight, state.has_bias, state.eps);
  if (!result) return std::nullopt;
  return std::vector<Tensor>{
      state.input_needs_grad ? result->grad_input : Tensor(),
      state.weight_needs_grad ? result->grad_weight.to(state.weight_dtype) : Tensor(),
      state.bias_needs_grad ? result->grad_bias.to(state.bias_dtype) : Tensor()};
}

// The gradients of input, weight and bias. With relu_output (batch_norm_relu's output), grad is
// the output's, and relu's backward masks it inside batch norm's own passes (no masked copy).
std::vector<Tensor> batch_norm_backward(const BackwardState& state, const Tensor& grad,
                                        const Tensor& relu_output = Tensor()) {
  const Tensor& x = state.input.get();
  const Tensor weight = state.weight.defined() ? state.weight.get() : Tensor();
  const norm::ChannelLayout& layout = state.layout;
  const TensorOptions acc_options = TensorOptions(acc_dtype(x.dtype())).device(x.device());
  Tensor dy = grad.contiguous(state.format);
  Tensor mask = relu_output.defined() ? relu_output.contiguous(state.format) : Tensor();
  // Where relu's mask applies: inside batch norm's two passes on CUDA (one memory pass fewer);
  // first, in a pass of its own, on the CPU, whose sums run in scalar loops that must keep their
  // order, where reading a third operand cost more than the vectorised mask pass saves (2.26
  // against 2.06 ms for a bfloat16 [32, 64, 32, 32] step on a 2-core AVX-512 EPYC); and first
  // for oneDNN's and cuDNN's plain backward, which take dy as it is.
  if (mask.defined() && (x.is_cpu() || state.stats.variance.defined() || state.cudnn)) {
    dy = elementwise::binary_forward(elementwise::BinaryOp::ReluBackward, dy, mask,
                                     "batch_norm_relu backward");
    mask = Tensor();
  }
  if (auto grads = onednn_backward(state, dy, weight)) return *grads;
  if (state.cudnn) {
    MINIDL_INTERNAL_ASSERT(state.cudnn->ops == cuda::CudnnBatchNormOps::Normalize,
                           "batch_norm: cuDNN's fused ReLU is batch_norm_relu's to differentiate");
    std::vector<Tensor> grads = cudnn_backward(state, dy, Tensor());
    grads.pop_back();  // no residual
    return grads;
  }
  // The per-channel sums feed grad_weight, grad_bias, and grad_input under batch statistics.
  Tensor sum_dy, sum_dy_xmu;
  const bool batch = state.statistics == norm::Statistics::Batch;
  if (state.weight_needs_grad || state.bias_needs_grad || (batch && state.input_needs_grad)) {
    sum_dy = zeros({layout.channels}, acc_options);
    sum_dy_xmu = zeros({layout.channels}, acc_options);
    if (layout.numel() > 0)
      kernels_for<NormKernels>(x.device())
          .batch_norm_backward_reduce(sum_dy, sum_dy_xmu, dy, x, state.stats.mean, layout, mask);
  }
  Tensor grad_input;
  if (state.input_needs_grad) {
    grad_input = empty(x.sizes(), x.options(), state.format);
    if (layout.numel() > 0)
      kernels_for<NormKernels>(x.device())
          .batch_norm_backward_input(grad_input, dy, x, state.stats.mean, state.stats.invstd,
                                     weight, sum_dy, sum_dy_xmu, layout, state.statistics, mask);
  }
  Tensor grad_weight, grad_bias;
  if (state.weight_needs_grad)
    grad_weight = (sum_dy_xmu * state.stats.invstd).to(state.weight_dtype);
  if (state.bias_needs_grad) grad_bias = sum_dy.to(state.bias_dtype);
  return {grad_input, grad_weight, grad_bias};
}

// batch_norm's forward, shared with the fused batch_norm_relu (`relu`: the output is
// relu(normalised + residual), residual undefined or of the input's shape): the output, and what
// backward needs when input, weight or bias needs a gradient.
struct Normalized {
  Tensor out;
  std::optional<BackwardState> state;
};

Normalized batch_norm_forward(const Tensor& input, const Tensor& running_mean,
                              const Tensor& running_var, const Tensor& weight, const Tensor& bias,
                              bool training, double momentum, double eps,
                              const Tensor& residual = Tensor(), bool relu = false) {
  check_arguments(input, running_mean, running_var, weight, bias, training, momentum, eps);
  const DType acc = acc_dtype(input.dtype());
  const MemoryFormat format =
      input.dim() == 4 ? input.suggest_memory_format() : MemoryFormat::Contiguous;
  Tensor x;
  {
    NoGradGuard no_grad;
    x = input.contiguous(format);
  }
  const Tensor weight_acc = as_acc(weight, acc), bias_acc = as_acc(bias, acc);
  const norm::ChannelLayout layout = layout_of(x, format);
  Normalized result;
  ChannelStatistics stats;
  std::optional<cuda::CudnnBatchNormSaved> on_cudnn_saved;
  if (auto on_onednn = training ? onednn_training(x, format, running_mean, running_var, weight_acc,
                                                  bias_acc, momentum, eps)
                                : std::nullopt) {
    std::tie(result.out, stats) = std::move(*on_onednn);
    if (relu) add_relu_in_place(result.out, residual);
  } else if (auto on_cudnn = training
                                 ? cudnn_training(x, format, running_mean, running_var, weight_acc,
                                                  bias_acc, momentum, eps, residual, relu)
                                 : std::nullopt) {
    result.out = std::move(on_cudnn->out);
    stats = {on_cudnn->saved.mean, on_cudnn->saved.invstd, Tensor()};
    if (relu && on_cudnn->saved.ops == cuda::CudnnBatchNormOps::Normalize)
      add_relu_in_place(result.out, residual);
    on_cudnn_saved = std::move(on_cudnn->saved);
  } else {
    stats = training ? batch_statistics(x, layout, running_mean, running_var, momentum, eps)
                     : running_statistics(running_mean, running_var, acc, eps);
    result.out = empty(x.sizes(), x.options(), format);
    Tensor dense_residual;
    if (residual.defined()) {
      NoGradGuard no_grad;
      dense_residual = residual.contiguous(format);
    }
    apply(result.out, x, stats, weight_acc, bias_acc, layout, dense_residual, relu);
  }
  if (autograd::needs_grad({input, weight, bias}))
    result.state = BackwardState{
        autograd::SavedTensor(x, kOp),
        weight_acc.defined() ? autograd::SavedTensor(weight_acc, kOp) : autograd::SavedTensor(),
        stats,
        layout,
        format,
        training ? norm::Statistics::Batch : norm::Statistics::Running,
        eps,
        bias.defined(),
        weight.defined() ? weight.dtype() : acc,
        bias.defined() ? bias.dtype() : acc,
        input.requires_grad(),
        weight.defined() && weight.requires_grad(),
        bias.defined() && bias.requires_grad(),
        on_cudnn_saved,
        on_cudnn_saved ? autograd::SavedTensor(bias_acc, kOp) : autograd::SavedTensor()};
  return result;
}

void check_residual(const Tensor& residual, const Tensor& input) {
  constexpr const char* op = "batch_norm_relu";
  if (!residual.defined()) return;
  MINIDL_CHECK(residual.sizes() == input.sizes(), op, ": expected a residual of the input's ",
               "shape ", input.sizes(), ", got shape ", residual.sizes());
  MINIDL_CHECK(residual.dtype() == input.dtype() && residual.device() == input.device(), op,
               ": expected a residual of the input's dtype and device (", input.dtype(), " on ",
               input.device(), "), got ", residual.dtype(), " on ", residual.device());
}

}  // namespace

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps) {
  const ProfileScope profile("batch_norm", {input, running_mean, running_var, weight, bias});
  Normalized normalized =
      batch_norm_forward(input, running_mean, running_var, weight, bias, training, momentum, eps);
  if (normalized.state)
    autograd::record(normalized.out, "BatchNormBackward", {input, weight, bias},
                     [state = *normalized.state](const Tensor& grad) {
                       return batch_norm_backward(state, grad);
                     });
  return normalized.out;
}

Tensor batch_norm_relu(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight, const Tensor& bias, bool training, double momentum,
                       double eps, const Tensor& residual) {
  const ProfileScope profile("batch_norm_relu", {input, weight, bias, residual});
  check_residual(residual, input);
  // The sum and the ReLU round as add and relu do, so the result has the bits of
  // relu(batch_norm(...) + residual) (norm::add_relu).
  Normalized normalized = batch_norm_forward(input, running_mean, running_var, weight, bias,
                                             training, momentum, eps, residual, /*relu=*/true);
  Tensor& out = normalized.out;
  const bool residual_needs_grad = residual.defined() && residual.requires_grad();
  if (normalized.state || residual_needs_grad) {
    // The output tells where the ReLU passed the gradient (as relu's own backward reads it).
    autograd::SavedTensor kept(out, "batch_norm_relu");
    autograd::record(
        out, residual.defined() ? "BatchNormAddReluBackward" : "BatchNormReluBackward",
        {input, weight, bias, residual},
        [state = std::move(normalized.state), kept, residual_needs_grad](const Tensor& grad) {
          if (state && state->cudnn && state->cudnn->ops != cuda::CudnnBatchNormOps::Normalize) {
            std::vector<Tensor> grads = cudnn_backward(*state, grad, kept.get());
            if (!residual_needs_grad) grads.back() = Tensor();
            return grads;
          }
          if (!residual_needs_grad) {  // no one needs the masked gradient itself
            std::vector<Tensor> grads = batch_norm_backward(*state, grad, kept.get());
            grads.emplace_back();
            return grads;
          }
          Tensor passed = elementwise::binary_forward(elementwise::BinaryOp::ReluBackward, grad,
                                                      kept.get(), "batch_norm_relu backward");
          std::vector<Tensor> grads =
              state ? batch_norm_backward(*state, passed) : std::vector<Tensor>(3);
          grads.push_back(passed);
          return grads;
        });
  }
  return out;
}

}  // namespace minidl
