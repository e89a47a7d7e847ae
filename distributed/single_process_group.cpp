#include "minidl/distributed/single_process_group.h"

#include "minidl/core/autograd/grad_mode.h"

namespace minidl::distributed {

std::shared_ptr<Work> SingleProcessGroup::all_reduce_async(const Tensor& tensor, ReduceOp op) {
  detail::check_collective_tensor(tensor, "all_reduce");
  detail::check_reduce_op(op, tensor.dtype(), "all_reduce");
  return std::make_shared<CompletedWork>();
}

std::shared_ptr<Work> SingleProcessGroup::broadcast_async(const Tensor& tensor, int root) {
  detail::check_collective_tensor(tensor, "broadcast");
  detail::check_root(root, 1, "broadcast");
  return std::make_shared<CompletedWork>();
}

std::shared_ptr<Work> SingleProcessGroup::all_gather_async(const Tensor& output,
                                                           const Tensor& input) {
  detail::check_gather_sizes(output, input, 1, "all_gather", "output", "input");
  NoGradGuard no_grad;
  if (!output.is_same(input)) output.view({output.numel()}).copy_(input.reshape({input.numel()}));
  return std::make_shared<CompletedWork>();
}

std::shared_ptr<Work> SingleProcessGroup::reduce_scatter_async(const Tensor& output,
                                                               const Tensor& input, ReduceOp op) {
  detail::check_gather_sizes(input, output, 1, "reduce_scatter", "input", "output");
  detail::check_reduce_op(op, input.dtype(), "reduce_scatter");
  NoGradGuard no_grad;
  if (!output.is_same(input)) output.view({output.numel()}).copy_(input.reshape({input.numel()}));
  return std::make_shared<CompletedWork>();
}

std::shared_ptr<Work> SingleProcessGroup::barrier_async() {
  return std::make_shared<CompletedWork>();
}

}  // namespace minidl::distributed
