// The autocast policy table and AutocastCall (see autocast_policy.h).
#include "minidl/ops/autocast_policy.h"

#include <array>

#include "minidl/core/autograd/function.h"

namespace minidl::amp {

namespace {

struct PolicyEntry {
  AutocastOp op;
  CastPolicy policy;
  std::string_view name;
};

// The policy, one row per AutocastOp in declaration order (checked below). Products run on
// tensor cores in 16 bits (accumulating in float32); whatever sums many terms or exponentiates
// stays in float32, where float16's range (max 65504) and both types' 8 or 11 bit mantissas
// would lose the result.
constexpr std::array kAutocastPolicy{
    PolicyEntry{AutocastOp::Conv2d, CastPolicy::LowerPrecision, "conv2d"},
    PolicyEntry{AutocastOp::Linear, CastPolicy::LowerPrecision, "linear"},
    PolicyEntry{AutocastOp::Matmul, CastPolicy::LowerPrecision, "matmul"},
    PolicyEntry{AutocastOp::Softmax, CastPolicy::Float32, "softmax"},
    PolicyEntry{AutocastOp::LogSoftmax, CastPolicy::Float32, "log_softmax"},
    PolicyEntry{AutocastOp::CrossEntropy, CastPolicy::Float32, "cross_entropy"},
    PolicyEntry{AutocastOp::NllLoss, CastPolicy::Float32, "nll_loss"},
    PolicyEntry{AutocastOp::MseLoss, CastPolicy::Float32, "mse_loss"},
    PolicyEntry{AutocastOp::BinaryCrossEntropyWithLogits, CastPolicy::Float32,
                "binary_cross_entropy_with_logits"},
    // On CUDA PyTorch refuses binary_cross_entropy under autocast, and so does minidl
    // (ops/pointwise_loss.cpp); on the CPU it runs in float32, as PyTorch's CPU list says.
    PolicyEntry{AutocastOp::BinaryCrossEntropy, CastPolicy::Float32, "binary_cross_entropy"},
    PolicyEntry{AutocastOp::SmoothL1Loss, CastPolicy::Float32, "smooth_l1_loss"},
    PolicyEntry{AutocastOp::L1Loss, CastPolicy::Float32, "l1_loss"},
    PolicyEntry{AutocastOp::HuberLoss, CastPolicy::Float32, "huber_loss"},
    PolicyEntry{AutocastOp::KlDiv, CastPolicy::Float32, "kl_div"},
    PolicyEntry{AutocastOp::Sum, CastPolicy::Float32, "sum"},
    PolicyEntry{AutocastOp::Mean, CastPolicy::Float32, "mean"},
    PolicyEntry{AutocastOp::Var, CastPolicy::Float32, "var"},
    // layer_norm is in PyTorch's float32 list (unlike batch_norm): its output is float32.
    PolicyEntry{AutocastOp::LayerNorm, CastPolicy::Float32, "layer_norm"},
    // As PyTorch's lower-precision list (AT_FORALL_LOWER_PRECISION_FP; on the CPU too: under
    // torch.autocast("cpu", torch.bfloat16) it returns bfloat16, checked with 2.15): the
    // products run in 16 bits while the softmax statistics accumulate in float32 in the kernel.
    PolicyEntry{AutocastOp::ScaledDotProductAttention, CastPolicy::LowerPrecision,
                "scaled_dot_product_attention"},
    PolicyEntry{AutocastOp::ConvTranspose2d, CastPolicy::LowerPrecision, "conv_transpose2d"},
    // group_norm is in PyTorch's float32 list, as layer_norm: its output is float32.
    PolicyEntry{AutocastOp::GroupNorm, CastPolicy::Float32, "group_norm"},
    // batch_norm is not here, as in PyTorch: it runs in its input's dtype, computing statistics
    // in float32 and keeping float32 parameters and running statistics as they are, so a
    // 16-bit activation stays 16-bit through it (and the ReLU and residual add after it).
};

constexpr bool rows_follow_enum_order() {
  for (size_t i = 0; i < kAutocastPolicy.size(); ++i)
    if (static_cast<size_t>(kAutocastPolicy[i].op) != i) return false;
  return kAutocastPolicy.back().op == AutocastOp::GroupNorm;
}
static_assert(rows_follow_enum_order(),
              "kAutocastPolicy must have one row per AutocastOp, in declaration order");

const PolicyEntry& entry(AutocastOp op) { return kAutocastPolicy[static_cast<size_t>(op)]; }

bool is_16bit_float(DType dtype) { return dtype == kFloat16 || dtype == kBFloat16; }

bool is_parameter(const Tensor& t) { return t.is_leaf() && t.requires_grad(); }

// `t` converted to `target` and laid out in `format` (channels-last) by one copy, where to()
// then contiguous(format) would take two passes over it. Differentiable as to(): the gradient
// is converted back to t's dtype (a layout change passes it through unchanged).
Tensor cast_and_lay_out(const Tensor& t, DType target, MemoryFormat format) {
  Tensor out = empty(t.sizes(), t.options().dtype(target), format);
  {
    NoGradGuard no_grad;
    out.copy_(t);
  }
  const DType from = t.dtype();
  autograd::record(
      out, "ToCopyBackward", {t},
      [from](const Tensor& grad) { return std::vector<Tensor>{grad.to(from)}; },
      autograd::DoubleBackward::kSupported);
  return out;
}

Tensor cast_input(const Tensor& t, DType target, MemoryFormat format) {
  if (!t.defined() || !t.is_floating_point() || t.dtype() == kFloat64) return t;
  if (target == kFloat32 && !is_16bit_float(t.dtype())) return t;
  const bool laid_out = format == MemoryFormat::Contiguous || t.is_contiguous(format);
  if (t.dtype() == target && laid_out) return t;
  if (t.dtype() == kFloat32 && is_parameter(t)) return cached_cast(t, target, format);
  if (t.dtype() == target) return t.contiguous(format);
  if (format == MemoryFormat::Contiguous) return t.to(target);
  return cast_and_lay_out(t, target, format);
}

}  // namespace

CastPolicy cast_policy(AutocastOp op) { return entry(op).policy; }

std::string_view autocast_op_name(AutocastOp op) { return entry(op).name; }

AutocastCall::AutocastCall(AutocastOp op,
                           std::initializer_list<std::reference_wrapper<const Tensor>> inputs) {
  if (!is_autocast_enabled()) return;
  const bool lower = cast_policy(op) == CastPolicy::LowerPrecision;
  const DType target = lower ? autocast_dtype() : kFloat32;
  cast_inputs_.reserve(inputs.size());
  for (const Tensor& input : inputs) {
    // cuDNN's fast convolutions take channels-last; on the CPU, a channels-last input stays so
    // (as PyTorch's to() preserves a layout), which oneDNN takes without a reorder.
    const bool channels_last =
        (op == AutocastOp::Conv2d || op == AutocastOp::ConvTranspose2d) && input.defined() &&
        input.dim() == 4 &&
        (input.is_cuda() || input.suggest_memory_format() == MemoryFormat::ChannelsLast);
    cast_inputs_.push_back(cast_input(
        input, target, channels_last ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous));
  }
  autocast_off_.emplace();
}

}  // namespace minidl::amp
