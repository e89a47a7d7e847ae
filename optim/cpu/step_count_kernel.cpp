// The per-parameter step counts on the CPU (optim/multi_tensor_kernels.h).
#include "minidl/ops/multi_tensor_table.h"
#include "minidl/optim/multi_tensor_kernels.h"

namespace minidl::cpu {
namespace {

void increment_step_counts(const MultiTensorArgs& args, int list) {
  if (args.skip_flag != nullptr && *args.skip_flag != 0.0f) return;
  const auto* tensors =
      reinterpret_cast<const TensorListEntry*>(args.table + args.layout.tensors_offset);
  for (int64_t t = 0; t < args.layout.num_tensors; ++t)
    *static_cast<float*>(tensors[t].data[list]) += 1.0f;
}

}  // namespace
}  // namespace minidl::cpu

namespace minidl::optim {

const StepCountKernels StepCountKernels::kCpu{
    .increment = cpu::increment_step_counts,
};

}  // namespace minidl::optim
