// SGD's update on the CPU: the element functor of optim/sgd_math.h over every tensor of the
// table, each tensor's loop split across minidl's CPU threads.
#include "minidl/ops/cpu/multi_tensor_apply.h"
#include "minidl/optim/multi_tensor_kernels.h"
#include "minidl/optim/sgd_math.h"

namespace minidl::cpu {
namespace {

void sgd_update(const MultiTensorArgs& args) { multi_tensor_apply<optim::SgdOp>(args, "SGD step"); }

}  // namespace
}  // namespace minidl::cpu

namespace minidl::optim {

const SgdKernels SgdKernels::kCpu{
    .update = cpu::sgd_update,
};

}  // namespace minidl::optim
