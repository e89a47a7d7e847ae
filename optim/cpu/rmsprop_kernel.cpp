// RMSprop's update on the CPU: the element functor of optim/rmsprop_math.h over every tensor of the
// table, each tensor's loop split across minidl's CPU threads.
#include "minidl/ops/cpu/multi_tensor_apply.h"
#include "minidl/optim/multi_tensor_kernels.h"
#include "minidl/optim/rmsprop_math.h"

namespace minidl::cpu {
namespace {

void rmsprop_update(const MultiTensorArgs& args) {
  multi_tensor_apply<optim::RmspropOp>(args, "RMSprop step");
}

}  // namespace
}  // namespace minidl::cpu

namespace minidl::optim {

const RmspropKernels RmspropKernels::kCpu{
    .update = cpu::rmsprop_update,
};

}  // namespace minidl::optim
