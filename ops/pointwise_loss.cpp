// The element-wise losses (see ops/pointwise_loss.h), composed of element-wise ops and
// reductions, which give them both backends and their gradients. binary_cross_entropy alone has
// its own backward node, because the composition's gradient at a probability of exactly 0 or 1
// would be 0/0 (Note [BCE gradient at 0 and 1]).
#include "minidl/ops/pointwise_loss.h"

#include <vector>

#include "minidl/core/autocast.h"
#include "minidl/core/autograd/function.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/autocast_policy.h"
#include "minidl/ops/broadcast.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/reduce.h"

namespace minidl {

namespace {

// softplus(x) = log(1 + exp(x)) below this, x above it. At 40, log1p(exp(-40)) = 4e-18 is below
// the rounding of 40 in float64 (and float32), so the result is exact to rounding, while
// exp(40) is still finite in float32 (the computing type of the 16-bit dtypes too).
constexpr double kExactSoftplusThreshold = 40.0;

// PyTorch clamps each log of binary_cross_entropy at -100, so that log(0) gives a finite loss.
constexpr double kLogClamp = -100.0;

// The smallest x (1 - x) binary_cross_entropy's gradient divides by: PyTorch's EPSILON, a float
// 1e-12 in every dtype (9.99999996e-13), whose exact value sets the gradient at x = 0 or 1.
constexpr double kBceGradientEpsilon = static_cast<double>(1e-12f);

void check_floating_input(const Tensor& input, const char* op) {
  MINIDL_CHECK(input.is_floating_point(), op,
               ": expected a floating-point input (float32, float64, float16 or bfloat16), got ",
               input.dtype());
}

// `other` (target, weight, pos_weight) must have the input's dtype and device: minidl does no
// type promotion.
void check_like_input(const Tensor& other, const Tensor& input, const char* op, const char* what) {
  MINIDL_CHECK(other.dtype() == input.dtype(), op, ": expected ", what, " of the input's dtype ",
               input.dtype(), ", got ", what, " of dtype ", other.dtype());
  MINIDL_CHECK(other.device() == input.device(), op, ": expected ", what, " on ", input.device(),
               " like the input, got ", what, " on ", other.device());
}

void check_same_shape(const Tensor& target, const Tensor& input, const char* op) {
  MINIDL_CHECK(target.sizes() == input.sizes(), op, ": expected target of the input's shape ",
               input.sizes(), ", got target of shape ", target.sizes());
}

// A weight broadcasts to `sizes` without changing them.
void check_broadcasts_to(const Tensor& weight, const Shape& sizes, const char* op,
                         const char* what) {
  const Shape broadcast = broadcast_shapes(weight.sizes(), sizes, op);
  MINIDL_CHECK(broadcast == sizes, op, ": expected ", what,
               " that broadcasts to the input's shape ", sizes, ", got ", what, " of shape ",
               weight.sizes());
}

// The checks of l1_loss, smooth_l1_loss, huber_loss and kl_div on their pair: both defined, a
// floating input, a target of its dtype and device, shapes that broadcast together (the loss
// broadcasts them, as PyTorch's). `check_scalars` checks the op's own scalars (smooth_l1_loss's
// beta, huber_loss's delta) after the tensors and before the shapes.
template <typename CheckScalars>
void check_loss_pair(const Tensor& input, const Tensor& target, const char* op,
                     CheckScalars&& check_scalars) {
  check_defined(input, op, "input");
  check_defined(target, op, "target");
  check_floating_input(input, op);
  check_like_input(target, input, op, "target");
  check_scalars();
  broadcast_shapes(input.sizes(), target.sizes(), op);  // names this op when they do not broadcast
}

void check_loss_pair(const Tensor& input, const Tensor& target, const char* op) {
  check_loss_pair(input, target, op, [] {});
}

Tensor reduce_loss(const Tensor& losses, Reduction reduction, const char* op) {
  switch (reduction) {
    case Reduction::None: return losses;
    case Reduction::Sum: return sum(losses);
    case Reduction::Mean: return mean(losses);
  }
  MINIDL_CHECK(false, op, ": expected reduction None, Mean or Sum, got the value ",
               static_cast<int>(reduction));
  return {};
}

Tensor one_minus(const Tensor& x) { return add(neg(x), 1.0); }

// Every element of x in [0, 1] (NaN is not), checked on the CPU only: on CUDA the check would
// make the host wait for the device.
void check_probabilities(const Tensor& x, const char* op, const char* what) {
  if (!x.is_cpu() || x.numel() == 0) return;
  NoGradGuard no_grad;
  const bool inside = all(logical_and(ge(x, 0.0), le(x, 1.0))).item<bool>();
  MINIDL_CHECK(inside, op, ": all elements of ", what, " should be between 0 and 1");
}

// Note [BCE gradient at 0 and 1]: the loss clamps log(x) and log(1 - x) at -100, so a composed
// gradient would be 0 * (1 / 0) = NaN where a probability saturated to exactly 0 or 1 (a float32
// sigmoid does below -88). PyTorch's backward is (x - y) / max(x (1 - x), 1e-12) for the input
// and log(1 - x) - log(x) for the target; this node computes the same.
Tensor unreduced_binary_cross_entropy(const Tensor& input, const Tensor& target) {
  Tensor losses;
  {
    NoGradGuard no_grad;
    const Tensor log_x = clamp_min(log(input), kLogClamp);
    const Tensor log_one_minus_x = clamp_min(log1p(neg(input)), kLogClamp);
    // PyTorch's form: (y - 1) log(1 - x) - y log(x).
    losses = sub(mul(sub(target, 1.0), log_one_minus_x), mul(target, log_x));
  }
  if (autograd::needs_grad({input, target})) {
    autograd::SavedTensor saved_input(input, "binary_cross_entropy");
    autograd::SavedTensor saved_target(target, "binary_cross_entropy");
    autograd::record(
        losses, "BinaryCrossEntropyBackward", {input, target},
        [saved_input, saved_target, input_needs_grad = input.requires_grad(),
         target_needs_grad = target.requires_grad()](const Tensor& grad) {
          // Recorded ops: under create_graph the gradient is differentiable.
          const Tensor& x = saved_input.get();
          const Tensor& y = saved_target.get();
          Tensor grad_input, grad_target;
          if (input_needs_grad) {
            const Tensor denominator = clamp_min(mul(x, one_minus(x)), kBceGradientEpsilon);
            grad_input = mul(grad, div(sub(x, y), denominator));
          }
          if (target_needs_grad) grad_target = mul(grad, sub(log1p(neg(x)), log(x)));  // -logit(x)
          return std::vector<Tensor>{grad_input, grad_target};
        },
        autograd::DoubleBackward::kSupported);
  }
  return losses;
}

}  // namespace

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight, const Tensor& pos_weight,
                                        Reduction reduction) {
  if (amp::AutocastCall cast{amp::AutocastOp::BinaryCrossEntropyWithLogits,
                             {input, target, weight, pos_weight}})
    return binary_cross_entropy_with_logits(cast[0], cast[1], cast[2], cast[3], reduction);
  const char* op = "binary_cross_entropy_with_logits";
  const ProfileScope profile(op, {input, target});
  check_defined(input, op, "input");
  check_defined(target, op, "target");
  check_floating_input(input, op);
  check_like_input(target, input, op, "target");
  check_same_shape(target, input, op);
  // -log(sigmoid(x)), exact for every x (softplus is log1p(exp(.)) below the threshold).
  const Tensor neg_log_sigmoid = softplus(neg(input), 1.0, kExactSoftplusThreshold);
  Tensor losses;
  if (pos_weight.defined()) {
    check_like_input(pos_weight, input, op, "pos_weight");
    check_broadcasts_to(pos_weight, target.sizes(), op, "pos_weight");
    // The positive term log(sigmoid(x)) is weighted by pos_weight: 1 + (pos_weight - 1) y.
    const Tensor log_weight = add(mul(sub(pos_weight, 1.0), target), 1.0);
    losses = add(mul(one_minus(target), input), mul(log_weight, neg_log_sigmoid));
  } else {
    losses = add(mul(one_minus(target), input), neg_log_sigmoid);
  }
  if (weight.defined()) {
    check_like_input(weight, input, op, "weight");
    check_broadcasts_to(weight, input.sizes(), op, "weight");
    losses = mul(losses, weight);
  }
  return reduce_loss(losses, reduction, op);
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            Reduction reduction) {
  const char* op = "binary_cross_entropy";
  check_defined(input, op, "input");
  // PyTorch's CUDA autocast refuses it: in 16 bits, probabilities near 1 round to 1.
  MINIDL_CHECK(!(amp::is_autocast_enabled() && input.is_cuda()), op,
               ": unsafe to autocast (16-bit probabilities saturate at 0 and 1); use "
               "binary_cross_entropy_with_logits (nn::BCEWithLogitsLoss) on the logits, which "
               "is safe, or leave autocast for this op");
  if (amp::AutocastCall cast{amp::AutocastOp::BinaryCrossEntropy, {input, target, weight}})
    return binary_cross_entropy(cast[0], cast[1], cast[2], reduction);
  const ProfileScope profile(op, {input, target});
  check_defined(target, op, "target");
  check_floating_input(input, op);
  check_like_input(target, input, op, "target");
  check_same_shape(target, input, op);
  check_probabilities(input, op, "input");
  check_probabilities(target, op, "target");
  Tensor losses = unreduced_binary_cross_entropy(input, target);
  if (weight.defined()) {
    check_like_input(weight, input, op, "weight");
    check_broadcasts_to(weight, input.sizes(), op, "weight");
    losses = mul(losses, weight);
  }
  return reduce_loss(losses, reduction, op);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction, double beta) {
  if (amp::AutocastCall cast{amp::AutocastOp::SmoothL1Loss, {input, target}})
    return smooth_l1_loss(cast[0], cast[1], reduction, beta);
  const char* op = "smooth_l1_loss";
  const ProfileScope profile(op, {input, target});
  check_loss_pair(input, target, op,
                  [&] { MINIDL_CHECK(beta >= 0, op, ": expected beta >= 0, got ", beta); });
  const Tensor difference = sub(input, target);
  const Tensor distance = abs(difference);
  if (beta == 0) return reduce_loss(distance, reduction, op);  // the L1 loss
  // The quadratic branch squares the difference itself, so that its gradient is exact at 0.
  const Tensor quadratic = mul(square(difference), 0.5 / beta);
  const Tensor linear = sub(distance, 0.5 * beta);
  return reduce_loss(where(lt(distance, beta), quadratic, linear), reduction, op);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction, double delta) {
  if (amp::AutocastCall cast{amp::AutocastOp::HuberLoss, {input, target}})
    return huber_loss(cast[0], cast[1], reduction, delta);
  const char* op = "huber_loss";
  const ProfileScope profile(op, {input, target});
  check_loss_pair(input, target, op,
                  [&] { MINIDL_CHECK(delta > 0, op, ": expected delta > 0, got ", delta); });
  const Tensor difference = sub(input, target);
  const Tensor distance = abs(difference);
  const Tensor quadratic = mul(square(difference), 0.5);
  const Tensor linear = mul(sub(distance, 0.5 * delta), delta);
  return reduce_loss(where(lt(distance, delta), quadratic, linear), reduction, op);
}

Tensor kl_div(const Tensor& input, const Tensor& target, KLDivReduction reduction,
              bool log_target) {
  if (amp::AutocastCall cast{amp::AutocastOp::KlDiv, {input, target}})
    return kl_div(cast[0], cast[1], reduction, log_target);
  const char* op = "kl_div";
  const ProfileScope profile(op, {input, target});
  check_loss_pair(input, target, op);
  Tensor losses;
  if (log_target) {
    losses = mul(exp(target), sub(target, input));
  } else {
    // xlogy(t, t) - t x: t log t is 0 where t is 0. log reads 1 there instead of 0, so that
    // neither the value nor the gradient meets log(0).
    const Tensor target_is_zero = eq(target, 0.0);
    const Tensor log_target_or_zero = log(where(target_is_zero, 1.0, target));
    losses = mul(target, sub(log_target_or_zero, input));
  }
  switch (reduction) {
    case KLDivReduction::None: return losses;
    case KLDivReduction::Sum: return sum(losses);
    case KLDivReduction::Mean: return mean(losses);
    case KLDivReduction::BatchMean: {
      // PyTorch divides by the first size of the input; a 0-d input is its own batch of one.
      const Tensor total = sum(losses);
      return input.dim() == 0 ? total : div(total, static_cast<double>(input.size(0)));
    }
  }
  MINIDL_CHECK(false, op, ": expected reduction None, BatchMean, Sum or Mean, got the value ",
               static_cast<int>(reduction));
  return {};
}

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  if (amp::AutocastCall cast{amp::AutocastOp::L1Loss, {input, target}})
    return l1_loss(cast[0], cast[1], reduction);
  const char* op = "l1_loss";
  const ProfileScope profile(op, {input, target});
  check_loss_pair(input, target, op);
  // abs's gradient is sign(input - target), 0 at a tie, as PyTorch's; abs, sub and the
  // reductions differentiate again, so l1_loss has a double backward (zero almost everywhere).
  return reduce_loss(abs(sub(input, target)), reduction, op);
}

}  // namespace minidl
