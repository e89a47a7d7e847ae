#pragma once
// GradScaler: dynamic loss scaling for float16 training, as torch.amp.GradScaler. float16
// gradients below 2^-24 flush to zero; multiplying the loss by a large scale keeps them in
// range, and the gradients are divided by it again before the optimizer uses them.
//
//   amp::GradScaler scaler;                       // init_scale 2^16
//   for (...) {
//     optimizer.zero_grad();
//     Tensor loss;
//     {
//       amp::AutocastGuard autocast(kFloat16);
//       loss = F::cross_entropy(model->forward(x), y);
//     }
//     scaler.scale(loss).backward();
//     scaler.step(optimizer);   // unscales, skips the step if a gradient is inf or NaN
//     scaler.update();          // x0.5 after a skip, x2 after growth_interval clean steps
//   }
//
// To clip or inspect gradients, call scaler.unscale_(optimizer) before scaler.step(optimizer).
// bfloat16 has float32's range and needs no scaler: as PyTorch's documentation says, use none
// with bfloat16. An enabled scaler still scales a bfloat16 loss (or one computed inside a
// bfloat16 autocast region) correctly, and logs a warning the first time it does.
//
// The scale, the growth tracker, the consecutive-skip count and the found-inf flag are
// one-element tensors on the gradients' device (created by the first scale()). On CUDA,
// scale(), unscale_(), step() and update() never wait for the device: the inf/NaN check is
// fused into the unscale kernel, the optimizers' fused kernels read the found-inf flag on the
// device (MultiTensorOptimizer::step_unless_found_inf), and the scale update is a one-thread
// kernel. On the CPU the same math (optim/amp_math.h) runs as plain loops.
//
// Note [Consecutive skips]
// A run whose every step overflows is broken (a NaN loss, a diverged model); the scale would
// only shrink to min_scale while nothing trains. After more than max_consecutive_skips skipped
// steps in a row the scaler throws. The count lives on the device; the host learns it
//  - on the CPU: in update(), exactly;
//  - on CUDA: in update(), from a mapped pinned-memory mirror the update kernel writes (no copy,
//    no sync), which lags by the steps still queued on the device; and exactly in get_scale()
//    and state_dict(), which read the device anyway;
//  - when the step was captured into a CUDA graph: from the same mirror, before every replay.
//
// A step with the scaler can be captured into a CUDA graph (core/cuda/graph.h) once an eager
// step has made the scaler's state: the unscale table is then the graph's own, uploaded before
// the first replay (optim/cuda/amp_kernel.cu), and the scale lives on the device anyway.
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "minidl/core/arg.h"
#include "minidl/core/tensor.h"
#include "minidl/optim/amp_math.h"
#include "minidl/optim/optimizer.h"
#include "minidl/optim/scalar_map.h"

namespace minidl::amp {

class GradScalerOptions {
 public:
  MINIDL_ARG(double, init_scale) = 65536.0;  // 2^16
  MINIDL_ARG(double, growth_factor) = 2.0;
  MINIDL_ARG(double, backoff_factor) = 0.5;
  MINIDL_ARG(int64_t, growth_interval) = 2000;
  // The scale never drops below this. 1.0: below it the "scaled" gradients would be smaller
  // than the true ones, the opposite of what scaling is for.
  MINIDL_ARG(double, min_scale) = 1.0;
  // See Note [Consecutive skips]; 0 turns the check off.
  MINIDL_ARG(int64_t, max_consecutive_skips) = 50;
  // A disabled scaler is a pass-through: scale() returns the loss, step() is optimizer.step().
  MINIDL_ARG(bool, enabled) = true;
};

class GradScaler {
 public:
  explicit GradScaler(const GradScalerOptions& options = GradScalerOptions());
  ~GradScaler();
  GradScaler(const GradScaler&) = delete;
  GradScaler& operator=(const GradScaler&) = delete;

  // loss * scale (in the loss's dtype and on its device). The first call places the scaler's
  // state on the loss's device.
  Tensor scale(const Tensor& loss);
  // Divides the gradients of `optimizer`'s parameters by the scale, in place, and records
  // whether any is inf or NaN. At most once per optimizer between two update() calls.
  void unscale_(optim::Optimizer& optimizer);
  // unscale_(optimizer) unless done already, then optimizer's step, skipped when a gradient
  // was inf or NaN. At most once per optimizer between two update() calls.
  void step(optim::Optimizer& optimizer);
  // Adjusts the scale from this iteration's inf/NaN checks (every optimizer stepped since the
  // last update counts) and starts the next iteration.
  void update();

  // The current scale (reads the device: a sync on CUDA); 1.0 when disabled.
  double get_scale();
  bool is_enabled() const { return options_.enabled(); }
  const GradScalerOptions& options() const { return options_; }

  // {"scale", "growth_tracker", "consecutive_skips", "init_scale", "growth_factor",
  //  "backoff_factor", "growth_interval", "min_scale", "max_consecutive_skips", "enabled"}:
  // JSON-able (optim::to_json) for a training checkpoint. Reads the device (a sync on CUDA).
  optim::ScalarMap state_dict();
  // The inverse; every key must be present and no other (the settings are restored too).
  void load_state_dict(const optim::ScalarMap& state);

 private:
  enum class Stage { Ready, Unscaled, Stepped };
  struct OptimizerRecord {
    Stage stage = Stage::Ready;
    Tensor found_inf;  // float32, one element, on the state's device
  };

  void check_options() const;
  void ensure_state(Device device);
  optim::ScaleUpdateParameters update_parameters() const;
  OptimizerRecord& record_of(optim::Optimizer& optimizer);
  void check_consecutive_skips(int64_t skips) const;
  void read_back_from_device();

  GradScalerOptions options_;
  // Host copies, authoritative until ensure_state() puts them on a device, and refreshed by
  // read_back_from_device().
  double host_scale_;
  int64_t host_growth_tracker_ = 0;
  int64_t host_consecutive_skips_ = 0;
  // Device state (undefined before the first scale()).
  Tensor scale_;                           // float32 []
  Tensor growth_tracker_;                  // int32 []
  Tensor consecutive_skips_;               // int32 []
  std::shared_ptr<int32_t> skips_mirror_;  // CUDA only: see Note [Consecutive skips]
  std::unordered_map<const optim::Optimizer*, OptimizerRecord> optimizers_;
  bool warned_bfloat16_ = false;
};

}  // namespace minidl::amp
