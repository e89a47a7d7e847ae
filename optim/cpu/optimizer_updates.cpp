// Every optimizer's update on the CPU: its element functor over every tensor of the table, each
// tensor's loop split across minidl's CPU threads (Note [Optimizer updates] in
// optim/multi_tensor_kernels.h).
#define MINIDL_OPTIMIZER_UPDATE(Op) template const UpdateKernels<Op> UpdateKernels<Op>::kCpu;

#include "minidl/ops/cpu/multi_tensor_apply.h"
#include "minidl/optim/multi_tensor_kernels.h"

namespace minidl::optim {

template <template <class> class Op>
void cpu_update(const MultiTensorArgs& args) {
  cpu::multi_tensor_apply<Op>(args, Op<float>::kStepName);
}

template <template <class> class Op>
const UpdateKernels<Op> UpdateKernels<Op>::kCpu{
    .update = cpu_update<Op>,
};

}  // namespace minidl::optim

// Instantiates the table of each optimizer that optim/optim.h includes.
#include "minidl/optim/optim.h"  // IWYU pragma: keep
