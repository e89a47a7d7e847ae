#pragma once
// What train_lenet and train_cifar10 share: the command line (CLI11), datasets, models,
// optimizer and schedule from the options, the Trainer run, and how results and errors are
// reported. Each program is a TrainerProgram (its name, choices and recipe defaults) and a
// main() that calls run_trainer_program.
//
// Exit status: 0 done; 1 an error (one line on stderr naming the file, option or device and what
// to do); 2 a usage error; 128 + the signal number when SIGINT or SIGTERM stopped the run (after
// a checkpoint was written).
#include <cstdint>
#include <string>
#include <vector>

namespace minidl::tools {

// The defaults of one program: the recipe that reaches its accuracy without flags.
struct TrainerRecipe {
  int64_t epochs = 10;
  int64_t batch_size = 128;
  double lr = 0.1;
  double momentum = 0.9;
  bool nesterov = true;
  double weight_decay = 5e-4;
  std::string schedule = "cosine";
  double warmup_epochs = 0;
  double label_smoothing = 0;
  bool augment = false;  // random crop and horizontal flip of the training images
};

struct TrainerProgram {
  std::string name;                   // "train_lenet"
  std::string description;            // the first line of --help
  std::vector<std::string> datasets;  // the first is the default
  std::vector<std::string> models;    // the first is the default
  TrainerRecipe recipe;
};

int run_trainer_program(const TrainerProgram& program, int argc, char** argv);

}  // namespace minidl::tools
