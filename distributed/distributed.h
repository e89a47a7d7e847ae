#pragma once
// distributed/: data-parallel training over MPI (CPU) and NCCL (CUDA), and the training loop
// the example trainers are built on.
#include "minidl/distributed/distributed_data_parallel.h"
#include "minidl/distributed/gradient_reducer.h"
#include "minidl/distributed/init.h"
#include "minidl/distributed/metrics_log.h"
#include "minidl/distributed/mpi_process_group.h"
#include "minidl/distributed/nccl_process_group.h"
#include "minidl/distributed/output_paths.h"
#include "minidl/distributed/process_group.h"
#include "minidl/distributed/single_process_group.h"
#include "minidl/distributed/stop_signal.h"
#include "minidl/distributed/trainer.h"
#include "minidl/distributed/trainer_options.h"
#include "minidl/distributed/training_checkpoint.h"
