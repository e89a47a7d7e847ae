#pragma once
// distributed/: data-parallel training over MPI (CPU) and NCCL (CUDA), and the training loop
// the example trainers are built on.
#include "distributed/distributed_data_parallel.h"
#include "distributed/gradient_reducer.h"
#include "distributed/init.h"
#include "distributed/metrics_log.h"
#include "distributed/mpi_process_group.h"
#include "distributed/nccl_process_group.h"
#include "distributed/output_paths.h"
#include "distributed/process_group.h"
#include "distributed/single_process_group.h"
#include "distributed/stop_signal.h"
#include "distributed/trainer.h"
#include "distributed/trainer_options.h"
#include "distributed/training_checkpoint.h"
