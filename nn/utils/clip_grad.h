#pragma once
// Gradient clipping, as torch.nn.utils.clip_grad_norm_ and clip_grad_value_:
//
//   loss.backward();
//   nn::utils::clip_grad_norm_(model->parameters(), /*max_norm=*/1.0);
//   optimizer.step();
//
// With a GradScaler (float16), unscale first: scaler.unscale_(optimizer), clip, then
// scaler.step(optimizer) (optim/grad_scaler.h).
//
// clip_grad_norm_ follows PyTorch's semantics:
// - parameters without a gradient are skipped; when none has one, the result is a float32 zero
//   on the CPU (torch.tensor(0.0)) and nothing changes;
// - the total norm is the norm of the per-gradient norms, as if every gradient were one vector,
//   computed per device and combined on the first gradient's device; the result is a
//   one-element tensor there, of the gradients' promoted dtype (float16 gradients give a
//   float16 norm; float16 with bfloat16, float32). The arithmetic, and how it matches
//   PyTorch's rounding, is Note [Gradient norms as PyTorch computes them] in
//   nn/utils/clip_grad_math.h;
// - every gradient is multiplied in place by min(max_norm / (total_norm + 1e-6), 1), also when
//   that is 1, so that no host decision (and no wait for the device) is needed;
// - norm_type: any p > 0, or infinity (std::numeric_limits<double>::infinity()); 2, 1 and
//   infinity have their own exact forms. PyTorch's 0, negative and -inf orders are an error;
// - error_if_nonfinite reads the norm on the host (a wait for the device, as in PyTorch) and
//   throws minidl::Error when it is NaN or infinite, before any gradient changes.
// On CUDA nothing else waits for the device: the gradients of each (device, dtype) are reduced
// by one multi-tensor launch, a one-block kernel finishes the norm and the coefficient on the
// device, and one multi-tensor launch per (device, dtype) scales the gradients by it. Read the
// result (.item()) only where the host needs it. A call can be captured into a CUDA graph (Note
// [What a captured step may do] in core/cuda/graph.h), except with error_if_nonfinite.
//
// float64 gradients live on the CPU (minidl has no float64 on a GPU), so they cannot share a
// call with CUDA gradients (their norm would be float64 on a GPU): that is an error.
#include <vector>

#include "minidl/core/tensor.h"

namespace minidl::nn::utils {

// Scales the gradients of `parameters` so that their total norm is at most max_norm; returns
// the total norm before clipping.
Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm,
                       double norm_type = 2.0, bool error_if_nonfinite = false);
Tensor clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// Clamps every gradient of `parameters` to [-clip_value, clip_value] in place (NaN stays NaN);
// parameters without a gradient are skipped.
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);
void clip_grad_value_(const Tensor& parameter, double clip_value);

}  // namespace minidl::nn::utils
