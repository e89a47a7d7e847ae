#pragma once
// The process group that distributed::default_process_group() gives CUDA tensors in a job of
// several ranks: NCCL's, on the rank's device, when minidl was built with NCCL
// (nccl_process_group.cpp); else the CPU group itself, which stages CUDA tensors through host
// memory (without_nccl.cpp). CMake builds exactly one of the two.
#include <memory>

#include "minidl/distributed/process_group.h"

namespace minidl::distributed::detail {

// Collective: every rank of `cpu_group` calls it (NCCL's id is broadcast over it).
std::shared_ptr<ProcessGroup> create_cuda_process_group(
    const std::shared_ptr<ProcessGroup>& cpu_group, int device, ProcessGroupOptions options);

}  // namespace minidl::distributed::detail
