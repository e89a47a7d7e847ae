#pragma once
// The per-epoch metrics of a training run as JSON lines, one object per epoch:
//   {"epoch": 3, "step": 1407, "lr": 0.05, "train_loss": 0.31, "test_loss": 0.33,
//    "test_accuracy": 0.882, "images_per_sec": 5123.4, "seconds": 11.7, "precision": "fp32"}
// A NextToken run adds "tokens_per_sec" after "images_per_sec".
// tools/plot_metrics.py draws the loss and accuracy curves from such a file.
//
// The file is only ever appended to: a fresh run adds its epochs after whatever metrics lines the
// file already holds, and a resumed run adds the epochs it trains after those of the run it
// resumes (an epoch that an interrupted run had logged after its last checkpoint appears twice,
// the later line being the one the resumed run's checkpoints follow). A file that holds anything
// else is refused before training, and never changed.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

namespace minidl::train {

struct EpochMetrics {
  int64_t epoch = 0;  // 1 for the first epoch
  int64_t step = 0;   // optimizer steps taken at its end
  double lr = 0;      // the learning rate of the last step (param group 0)
  double train_loss = 0;
  double test_loss = 0;
  double test_accuracy = 0;
  double images_per_sec = 0;  // training images per second of the epoch's training part
  // Target tokens per second of the same, for the NextToken objective (whose "images" are token
  // windows); 0 otherwise, and then left out of the JSON line.
  double tokens_per_sec = 0;
  double seconds = 0;              // the epoch's wall time, evaluation included
  std::string precision = "fp32";  // "fp32", "fp16" or "bf16"
};

std::string to_json(const EpochMetrics& metrics);

// `path` can take a run's metrics: it does not exist yet and can be created (check_writable_file
// in train/output_paths.h), or it is a writable regular file that is empty or holds metrics lines
// alone. Throws minidl::Error naming `option` ("--metrics", "TrainerOptions::metrics_path"), the
// path, and what the file holds (its first line that is not a metrics line) otherwise.
void check_metrics_file(const std::filesystem::path& path, std::string_view option);

class MetricsLog {
 public:
  // Opens `path` for appending, creating it (and its directory) if need be, after the checks of
  // check_metrics_file.
  MetricsLog(const std::filesystem::path& path, std::string_view option);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  // Appends one line and flushes it. Throws minidl::Error with the system's reason ("No space
  // left on device") when the line could not be written.
  void append(const EpochMetrics& metrics);

 private:
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
};

}  // namespace minidl::train
