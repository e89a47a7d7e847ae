#pragma once
// The kernel interfaces of the multi-tensor optimizers (optim/multi_tensor_optimizer.h),
// dispatched by kernels_for (Note [Kernel tables] in core/dispatch.h).
//
// Note [Optimizer updates]: an optimizer's update is one element functor, Op (in its header:
// optim/sgd.h, optim/adam.h, optim/rmsprop.h), run by ops/cpu/multi_tensor_apply.h on the CPU
// and by ops/cuda/multi_tensor_apply.cuh on CUDA. Its tables UpdateKernels<Op>::kCpu and ::kCuda
// are instantiated, for every optimizer at once, by optim/cpu/optimizer_updates.cpp and
// optim/cuda/optimizer_updates.cu: each defines MINIDL_OPTIMIZER_UPDATE(Op) to instantiate its
// backend's table and then includes optim/optim.h, whose optimizer headers each end with
// MINIDL_OPTIMIZER_UPDATE(TheirOp) (elsewhere the marker declares the tables extern, below). So an
// optimizer is its header, its source file and a line in optim/optim.h; one missing from
// optim/optim.h fails to link.
//
// Conventions:
// - args.table is a table image (Note [Multi-tensor apply] in ops/multi_tensor_table.h): host
//   memory on the CPU, device memory on CUDA. Its lists are laid out as optim/optimizer_math.h
//   says; all its tensors are of args.dtype (float64 on the CPU only).
// - CUDA kernels run on the current stream of args.device_index and never wait for it. When
//   args.skip_flag is nonzero, nothing changes.
#include "minidl/ops/multi_tensor_table.h"

// Declares that Op's tables are instantiated elsewhere, except in the two files that instantiate
// them (Note above), which define it first.
#ifndef MINIDL_OPTIMIZER_UPDATE
#define MINIDL_OPTIMIZER_UPDATE(Op)                                \
  extern template const UpdateKernels<Op> UpdateKernels<Op>::kCpu; \
  extern template const UpdateKernels<Op> UpdateKernels<Op>::kCuda;
#endif

namespace minidl::optim {

// One update of every tensor of the table.
using MultiTensorUpdate = void (*)(const MultiTensorArgs& args);

// The update of the optimizer whose element functor is Op (Note [Optimizer updates]).
template <template <class> class Op>
struct UpdateKernels {
  MultiTensorUpdate update;

  static const UpdateKernels kCpu;
  static const UpdateKernels kCuda;
};

// The per-parameter step counts (one-element float32 tensors), counted on their own device.
struct StepCountKernels {
  // Adds 1 to the float at data[list] of every tensor of the table. A launch of its own before
  // the update: an update's chunks of one tensor run in different blocks, so it could not both
  // increment the count and read it without a race.
  void (*increment)(const MultiTensorArgs& args, int list);

  static const StepCountKernels kCpu;
  static const StepCountKernels kCuda;
};

}  // namespace minidl::optim
