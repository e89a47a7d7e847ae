// Adam's and AdamW's update on the CPU: the element functor of optim/adam_math.h over every tensor
// of the table, each tensor's loop split across minidl's CPU threads.
#include "minidl/ops/cpu/multi_tensor_apply.h"
#include "minidl/optim/adam_math.h"
#include "minidl/optim/multi_tensor_kernels.h"

namespace minidl::cpu {
namespace {

void adam_update(const MultiTensorArgs& args) {
  multi_tensor_apply<optim::AdamOp>(args, "Adam step");
}

}  // namespace
}  // namespace minidl::cpu

namespace minidl::optim {

const AdamKernels AdamKernels::kCpu{
    .update = cpu::adam_update,
};

}  // namespace minidl::optim
