#pragma once
// Training checkpoints: everything a run needs to continue bit for bit, in one safetensors file
// (core/safetensors.h), so it is written atomically and validated before it is trusted.
//
//   tensors   "model.<state_dict key>"        the model's parameters and buffers
//             "optimizer.state.<i>.<key>"      the optimizer's per-parameter state
//             "trainer.train_loss_sum"         the epoch's running loss sum (float32 scalar)
//   metadata  "format"      kTrainingCheckpointFormat
//             "model", "dataset"              what was trained on what; resuming checks both
//             "epoch", "batch", "step"        the epoch in progress, its next batch, steps taken
//             "generator_seed", "generator_offset"  the default generator's state
//             "optimizer", "scheduler"        their scalar state as JSON (optim/scalar_map.h)
//             "train_samples"                 the samples behind train_loss_sum
//             "world_size"                    the ranks that trained it (1 when absent)
//             "precision"                     "fp32", "fp16" or "bf16"
//             "grad_scaler"                   the GradScaler's state as JSON (fp16 runs only)
//             "accumulate_steps"              batches per optimizer step (1 when absent)
//             "clip_grad_norm"                the gradient norm clipped to (0, off, when absent)
//             "run_settings"                  the settings that define the run, a JSON object of
//                                             strings (train/run_settings.h; none when absent)
//             "tensor_crc32"                  each tensor's CRC-32 (zlib's), a JSON object of
//                                             8-hex-digit strings, verified on reading (not when
//                                             absent)
//
// This file is the schema: every name above is written and read here and nowhere else, and
// TrainingCheckpoint carries each as a typed field.
//
// A checkpoint directory holds files named checkpoint-<step, 9 digits>.safetensors; the newest
// is the one with the most steps. Files being written have other names until they are complete,
// so every file under a checkpoint name is a complete one.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "minidl/core/generator.h"
#include "minidl/core/safetensors.h"
#include "minidl/nn/module.h"
#include "minidl/optim/checkpointable_scheduler.h"
#include "minidl/optim/optimizer.h"
#include "minidl/optim/scalar_map.h"
#include "minidl/train/run_settings.h"

namespace minidl::train {

inline constexpr const char* kTrainingCheckpointFormat = "minidl-training-checkpoint-1";

// The loop's part of a checkpoint; the model, optimizer and scheduler are passed beside it.
struct TrainingCheckpoint {
  std::string model;
  std::string dataset;
  int64_t epoch = 0;  // the epoch in progress (0-based)
  int64_t batch = 0;  // the next batch of that epoch
  int64_t step = 0;   // optimizer steps taken so far
  GeneratorState generator;
  Tensor train_loss_sum;      // float32 scalar: the epoch's running loss sum over every rank
  int64_t train_samples = 0;  // the samples behind it
  int64_t world_size = 1;
  std::string precision;                        // "fp32", "fp16" or "bf16"
  std::optional<optim::ScalarMap> grad_scaler;  // its state_dict, in fp16 runs
  // How the steps were taken (TrainerOptions); resuming with others would take other steps.
  // Checkpoints written before these options existed were trained with 1 and 0.
  int64_t accumulate_steps = 1;
  double clip_grad_norm = 0;
  RunSettings run_settings;  // empty in checkpoints written before settings were recorded
};

// Writes model, optimizer, scheduler (when not null) and `checkpoint` to `path`, atomically.
void save_training_checkpoint(const std::filesystem::path& path, const nn::Module& model,
                              const optim::Optimizer& optimizer,
                              const optim::CheckpointableScheduler* scheduler,
                              const TrainingCheckpoint& checkpoint);

// Reads `path`, checks that it is a training checkpoint of `expected_model` on
// `expected_dataset` with `expected_settings` (differing_settings in train/run_settings.h: every
// difference is named in one error), loads model, optimizer and scheduler from it, and returns
// the rest. The file, its names and its metadata are checked before anything is loaded; a model,
// optimizer or scheduler that does not fit it is an error too (the caller should then not train
// on). Errors name the file and what was expected and found.
TrainingCheckpoint load_training_checkpoint(const std::filesystem::path& path, nn::Module& model,
                                            optim::Optimizer& optimizer,
                                            optim::CheckpointableScheduler* scheduler,
                                            const std::string& expected_model,
                                            const std::string& expected_dataset,
                                            const RunSettings& expected_settings = {});

// ---- checkpoint directories ----

// <directory>/checkpoint-<step>.safetensors
std::filesystem::path checkpoint_path(const std::filesystem::path& directory, int64_t step);
// The checkpoint files in `directory`, oldest (fewest steps) first; none when it does not exist.
std::vector<std::filesystem::path> list_checkpoints(const std::filesystem::path& directory);
std::optional<std::filesystem::path> newest_checkpoint(const std::filesystem::path& directory);
// Removes all but the `keep` newest checkpoints.
void prune_checkpoints(const std::filesystem::path& directory, int64_t keep);

// Throws minidl::Error, naming the file and what is wrong, unless `path` is a complete, readable
// training checkpoint (safetensors header, every tensor's bytes and their CRC-32s, the format
// entry, a step equal to the one its name says). It does not
// check what the checkpoint holds against a model: load_training_checkpoint does.
void check_training_checkpoint_file(const std::filesystem::path& path);

// A checkpoint being written lives under "<checkpoint name>.tmp-<pid>-<n>" until it is renamed
// (an atomic write, core/safetensors.h). A process killed while writing leaves its temporary
// behind; this removes those in `directory` whose process is gone (no process has the pid, or it
// is this process, which has written none yet when a run starts) and returns them. Temporaries of
// live processes stay: another run may be writing into the same directory. The pid is this host's:
// on a file system shared by several hosts a dead process of another host whose pid is alive here
// is left alone.
std::vector<std::filesystem::path> remove_stale_temporaries(const std::filesystem::path& directory);

}  // namespace minidl::train
