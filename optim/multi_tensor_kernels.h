#pragma once
// The kernel interfaces of the multi-tensor optimizers (optim/multi_tensor_optimizer.h),
// dispatched by kernels_for (Note [Kernel tables] in core/dispatch.h). Each optimizer's update is
// one element functor (optim/sgd_math.h, optim/adam_math.h, optim/rmsprop_math.h) run by
// ops/cpu/multi_tensor_apply.h on the CPU and ops/cuda/multi_tensor_apply.cuh on CUDA; its tables
// are at the end of optim/cpu/<optimizer>_kernel.cpp and optim/cuda/<optimizer>_kernel.cu.
// Conventions:
// - args.table is a table image (Note [Multi-tensor apply] in ops/multi_tensor_table.h): host
//   memory on the CPU, device memory on CUDA. Its lists are laid out as optim/optimizer_math.h
//   says; all its tensors are of args.dtype (float64 on the CPU only).
// - CUDA kernels run on the current stream of args.device_index and never wait for it. When
//   args.skip_flag is nonzero, nothing changes.
#include "minidl/ops/multi_tensor_table.h"

namespace minidl::optim {

// One update of every tensor of the table.
using MultiTensorUpdate = void (*)(const MultiTensorArgs& args);

struct SgdKernels {
  MultiTensorUpdate update;

  static const SgdKernels kCpu;
  static const SgdKernels kCuda;
};

// Adam and AdamW (the group record says which).
struct AdamKernels {
  MultiTensorUpdate update;

  static const AdamKernels kCpu;
  static const AdamKernels kCuda;
};

struct RmspropKernels {
  MultiTensorUpdate update;

  static const RmspropKernels kCpu;
  static const RmspropKernels kCuda;
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
