#pragma once
// distributed/: data-parallel training over MPI (CPU) and NCCL (CUDA). The training loop built
// on it is in train/ (train/train.h).
#include "minidl/distributed/distributed_data_parallel.h"
#include "minidl/distributed/gradient_reducer.h"
#include "minidl/distributed/init.h"
#include "minidl/distributed/mpi_process_group.h"
#include "minidl/distributed/nccl_process_group.h"
#include "minidl/distributed/process_group.h"
#include "minidl/distributed/single_process_group.h"
#include "minidl/distributed/zero_redundancy_optimizer.h"
