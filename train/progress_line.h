#pragma once
// Progress inside an epoch: on a terminal one line rewritten in place,
//   epoch 3/10 [#########...........] 212/469  loss 0.3412  5230 img/s  eta 0:14
// and in a log a plain line every log_every steps,
//   epoch 3/10 step 200/469 loss 0.3412 5230 img/s eta 15s
// Reading the loss costs a device synchronisation, so the loop asks due() first and reads the
// loss only when a line is due.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

#include "minidl/train/trainer_options.h"

namespace minidl::train {

class ProgressLine {
 public:
  // kAuto resolves to kLive when `out` is a person's terminal (is_interactive_terminal: not under
  // mpirun, which gives its ranks a pseudo-terminal even when its output goes to a log).
  ProgressLine(ProgressMode mode, int64_t log_every, std::FILE* out = stdout);

  void start_epoch(int64_t epoch, int64_t epochs, int64_t batches, int64_t first_batch);
  // Whether a line is due after batch `done` (1-based count of batches finished this epoch).
  bool due(int64_t done) const;
  // `rate`: units per second, shown with unit() ("img/s", "tok/s").
  void show(int64_t done, double loss, double rate);
  // What the rate counts: "img" (the default) or "tok".
  void set_unit(std::string unit) { unit_ = std::move(unit); }
  const std::string& unit() const { return unit_; }
  // Clears a live line so the epoch's summary line replaces it.
  void end_epoch();

  ProgressMode mode() const { return mode_; }

 private:
  using Clock = std::chrono::steady_clock;
  // How often a live line is redrawn: often enough to look alive, rarely enough that its
  // synchronisations do not show in the step time.
  static constexpr std::chrono::milliseconds kLiveInterval{250};

  ProgressMode mode_;
  int64_t log_every_;
  std::FILE* out_;
  int64_t epoch_ = 0, epochs_ = 0, batches_ = 0, first_batch_ = 0;
  Clock::time_point started_, last_shown_;
  bool line_open_ = false;
  std::string unit_ = "img";
};

}  // namespace minidl::train
