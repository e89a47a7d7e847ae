// SGD's fused CUDA update: every parameter of one (device, dtype) in one launch of the
// multi-tensor apply kernel (Note [Multi-tensor apply] in ops/multi_tensor_table.h) with the
// element functor of optim/sgd_math.h, shared with the CPU.
#include "minidl/ops/cuda/multi_tensor_apply.cuh"
#include "minidl/optim/multi_tensor_kernels.h"
#include "minidl/optim/sgd_math.h"

namespace minidl::cuda {
namespace {

void sgd_update(const MultiTensorArgs& args) {
  launch_multi_tensor_apply<optim::SgdOp>(args, "SGD step");
}

}  // namespace
}  // namespace minidl::cuda

namespace minidl::optim {

const SgdKernels SgdKernels::kCuda{
    .update = cuda::sgd_update,
};

}  // namespace minidl::optim
