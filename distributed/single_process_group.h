#pragma once
// The process group of a job with one process (no mpirun, no MPI needed at run time): every
// collective is the identity (all_gather and reduce_scatter copy input to output), finished
// when it returns, on CPU and CUDA tensors alike.
#include "minidl/distributed/process_group.h"

namespace minidl::distributed {

class SingleProcessGroup final : public ProcessGroup {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend_name() const override { return "single"; }

  std::shared_ptr<Work> all_reduce_async(const Tensor& tensor, ReduceOp op) override;
  std::shared_ptr<Work> broadcast_async(const Tensor& tensor, int root) override;
  std::shared_ptr<Work> all_gather_async(const Tensor& output, const Tensor& input) override;
  std::shared_ptr<Work> reduce_scatter_async(const Tensor& output, const Tensor& input,
                                             ReduceOp op) override;
  std::shared_ptr<Work> barrier_async() override;
};

}  // namespace minidl::distributed
