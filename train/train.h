#pragma once
// train/: the training loop the example trainers are built on (Trainer, its options and objectives,
// the captured CUDA-graph step, training checkpoints, the metrics log, the progress line, the stop
// signal and the output paths). It depends on distributed/, never the reverse.
#include "minidl/train/metrics_log.h"
#include "minidl/train/objective.h"
#include "minidl/train/output_paths.h"
#include "minidl/train/run_settings.h"
#include "minidl/train/stop_signal.h"
#include "minidl/train/tensorboard_writer.h"
#include "minidl/train/tfrecord_writer.h"
#include "minidl/train/trainer.h"
#include "minidl/train/trainer_options.h"
#include "minidl/train/training_checkpoint.h"
