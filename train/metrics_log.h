#pragma once
// The per-epoch metrics of a training run as JSON lines, one object per epoch:
//   {"epoch": 3, "step": 1407, "lr": 0.05, "train_loss": 0.31, "test_loss": 0.33,
//    "test_accuracy": 0.882, "images_per_sec": 5123.4, "seconds": 11.7, "precision": "fp32"}
// tools/plot_metrics.py draws the loss and accuracy curves from such a file.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace minidl::train {

struct EpochMetrics {
  int64_t epoch = 0;  // 1 for the first epoch
  int64_t step = 0;   // optimizer steps taken at its end
  double lr = 0;      // the learning rate of the last step (param group 0)
  double train_loss = 0;
  double test_loss = 0;
  double test_accuracy = 0;
  double images_per_sec = 0;       // training images per second of the epoch's training part
  double seconds = 0;              // the epoch's wall time, evaluation included
  std::string precision = "fp32";  // "fp32", "fp16" or "bf16"
};

std::string to_json(const EpochMetrics& metrics);

class MetricsLog {
 public:
  // Opens `path` (creating its directory). A fresh run (keep_epochs == 0) empties the file; a
  // resumed one keeps the lines of epochs 1..keep_epochs and drops any later ones, which the
  // resumed run writes again.
  MetricsLog(const std::filesystem::path& path, int64_t keep_epochs);
  // Appends one line and flushes it.
  void append(const EpochMetrics& metrics);

 private:
  std::filesystem::path path_;
  std::ofstream out_;
};

}  // namespace minidl::train
