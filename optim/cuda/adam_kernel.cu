// Adam's and AdamW's fused CUDA update: every parameter of one (device, dtype) in one launch of the
// multi-tensor apply kernel (Note [Multi-tensor apply] in ops/multi_tensor_table.h) with the
// element functor of optim/adam_math.h, shared with the CPU.
#include "minidl/ops/cuda/multi_tensor_apply.cuh"
#include "minidl/optim/adam_math.h"
#include "minidl/optim/multi_tensor_kernels.h"

namespace minidl::cuda {
namespace {

void adam_update(const MultiTensorArgs& args) {
  launch_multi_tensor_apply<optim::AdamOp>(args, "Adam step");
}

}  // namespace
}  // namespace minidl::cuda

namespace minidl::optim {

const AdamKernels AdamKernels::kCuda{
    .update = cuda::adam_update,
};

}  // namespace minidl::optim
