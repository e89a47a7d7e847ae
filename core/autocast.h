#pragma once
// Autocast state (mixed precision): whether, on this thread, the ops in the autocast policy
// (ops/autocast_policy.h) cast their inputs, and to which 16-bit type. Like torch.autocast:
//
//   {
//     amp::AutocastGuard autocast(kBFloat16);   // or kFloat16 (with optim GradScaler)
//     Tensor logits = model->forward(x);         // conv2d, linear, matmul run in bfloat16
//     loss = F::cross_entropy(logits, y);        // losses, softmax, reductions in float32
//   }
//   loss.backward();                             // parameters get float32 gradients
//
// Guards nest: each one sets the state for its scope and restores the previous one after. A
// guard built with enabled = false switches autocast off for its scope (inside an enabled
// region too), as torch.autocast(enabled=False) does; at top level it changes nothing.
//
// Note [Autocast weight cache]
// Inside the outermost guard, a float32 leaf that requires grad (a parameter) is cast once per
// (target dtype, layout) and the cast reused by every later op of the region, as PyTorch's
// autocast weight cache does. An entry is keyed on the leaf and valid while the leaf's version
// is unchanged (an optimizer step bumps it) and while the cast's graph can still be walked (a
// backward frees it unless retain_graph). The cache empties when the outermost guard exits.
// The cast is Tensor::to, which is differentiable, so the float32 leaf receives a float32
// gradient through it.
//
// The autograd engine runs backward with autocast switched off (NoAutocastGuard): every backward
// computes in the dtypes its forward saw.
#include <cstddef>

#include "minidl/core/dtype.h"
#include "minidl/core/tensor.h"

namespace minidl::amp {

class AutocastGuard {
 public:
  // `dtype` is kFloat16 or kBFloat16. Under kFloat16, with grad mode on and no GradScaler built
  // in this process yet, the first such guard logs a warning (fp16 gradients underflow without
  // loss scaling; bfloat16 needs no scaler).
  explicit AutocastGuard(DType dtype, bool enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool previous_enabled_;
  DType previous_dtype_;
};

// Switches autocast off for its scope (used by the autograd engine, and by an op while it runs
// on inputs the policy already cast, so the ops it calls inside are not cast again).
class NoAutocastGuard {
 public:
  NoAutocastGuard();
  ~NoAutocastGuard();
  NoAutocastGuard(const NoAutocastGuard&) = delete;
  NoAutocastGuard& operator=(const NoAutocastGuard&) = delete;

 private:
  bool previous_enabled_;
};

// On this thread.
bool is_autocast_enabled();
// The 16-bit type of the innermost guard (meaningful when is_autocast_enabled()).
DType autocast_dtype();

// `leaf` (float32, a leaf that requires grad) cast to `dtype` and laid out in `format`, through
// the weight cache (Note [Autocast weight cache]): the same tensor for every call inside the
// outermost guard while the entry is valid. Outside any guard it casts without caching.
Tensor cached_cast(const Tensor& leaf, DType dtype, MemoryFormat format = MemoryFormat::Contiguous);
// Entries in this thread's weight cache (for tests).
size_t cast_cache_size();

namespace detail {
// Called by GradScaler's constructor, so the fp16 warning knows a scaler exists.
void note_grad_scaler_constructed();
}  // namespace detail

}  // namespace minidl::amp
