#pragma once
// The kernel interface of clip_grad_norm_ and clip_grad_value_ (nn/utils/clip_grad.h),
// implemented by nn/utils/cpu/clip_grad.cpp and nn/utils/cuda/clip_grad.cu; dispatched by
// kernels_for (Note [Kernel tables] in core/dispatch.h). The math and the element functors are
// nn/utils/clip_grad_math.h. Conventions:
// - The gradients come as multi-tensor tables (Note [Multi-tensor apply] in
//   ops/multi_tensor_table.h), one per (device, dtype), list 0 the gradients (dense, none
//   empty): float32, float16 or bfloat16, and float64 on the CPU. args.table is the image in
//   host memory on the CPU and in device memory on CUDA. A norm table's group record is
//   ClipNormGroup, a clamp table's ClipClampGroup.
// - Partials: one per chunk of a table, float64 on the CPU (every Acc fits) and float32 on CUDA.
// - total_norm is a one-element tensor of the promoted dtype R of the device's gradients;
//   clip_coef a one-element tensor of R's Acc (float64 when R is float64, else float32); both on
//   the tables' device, overwritten.
// - Nothing reads a device value on the host: CUDA kernels run on the current stream of the
//   tables' device and never wait for it, so they can be captured into a CUDA graph.
#include <cstdint>

#include "minidl/core/tensor.h"
#include "minidl/nn/utils/clip_grad_math.h"
#include "minidl/ops/multi_tensor_table.h"

namespace minidl::nn::utils {

// One table's part in finishing a device's norm.
struct NormTablePart {
  const std::byte* table = nullptr;  // as MultiTensorArgs::table
  MultiTensorLayout layout;
  DType dtype = kFloat32;       // of the table's tensors
  int64_t partials_offset = 0;  // where its chunks' partials start
};

// At most one table per floating dtype.
inline constexpr int kMaxNormTables = 4;

// What finishing one device's norm reads (by value: CUDA kernels take it as an argument).
struct NormFinishArgs {
  NormTablePart tables[kMaxNormTables];
  int32_t num_tables = 0;
  GradNormType norm_type;
  double max_norm = 0;
  int device_index = -1;  // the CUDA device (ignored on the CPU)
};

struct ClipGradKernels {
  // partials[c] = the norm's reduction (ClipNormTermOp) of chunk c of the table, for every
  // chunk; `partials` holds exactly the table's chunks.
  void (*reduce_chunks)(const MultiTensorArgs& args, const Tensor& partials);
  // From the partials of every table of one device: each tensor's norm rounded to its dtype,
  // their norm in total_norm's dtype, and the clamped coefficient for args.max_norm. No tables
  // (or only empty ones) give the norm 0.
  void (*finish_norm)(const NormFinishArgs& args, const Tensor& partials, const Tensor& total_norm,
                      const Tensor& clip_coef);
  // Multiplies every gradient of the table by the coefficient its group record points to.
  void (*scale)(const MultiTensorArgs& args);
  // Clamps every gradient of the table to [-clip_value, clip_value] (its group record's).
  void (*clamp)(const MultiTensorArgs& args);

  static const ClipGradKernels kCpu;
  static const ClipGradKernels kCuda;
};

}  // namespace minidl::nn::utils
