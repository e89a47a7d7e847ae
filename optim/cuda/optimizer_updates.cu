// Every optimizer's fused CUDA update: all parameters of one (device, dtype) in one launch of the
// multi-tensor apply kernel (Note [Multi-tensor apply] in ops/multi_tensor_table.h) with the
// optimizer's element functor, the one the CPU runs (Note [Optimizer updates] in
// optim/multi_tensor_kernels.h).
#define MINIDL_OPTIMIZER_UPDATE(Op) template const UpdateKernels<Op> UpdateKernels<Op>::kCuda;

#include "minidl/ops/cuda/multi_tensor_apply.cuh"
#include "minidl/optim/multi_tensor_kernels.h"

namespace minidl::optim {

template <template <class> class Op>
void cuda_update(const MultiTensorArgs& args) {
  cuda::launch_multi_tensor_apply<Op>(args, Op<float>::kStepName);
}

template <template <class> class Op>
const UpdateKernels<Op> UpdateKernels<Op>::kCuda{
    .update = cuda_update<Op>,
};

}  // namespace minidl::optim

// Instantiates the table of each optimizer that optim/optim.h includes.
#include "minidl/optim/optim.h"  // IWYU pragma: keep
