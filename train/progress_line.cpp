#include "minidl/train/progress_line.h"

#include <algorithm>
#include <string>

#include "minidl/core/logging.h"

namespace minidl::train {

namespace {

constexpr int kBarWidth = 20;

ProgressMode resolve(ProgressMode mode, std::FILE* out) {
  if (mode != ProgressMode::kAuto) return mode;
  return is_interactive_terminal(out) ? ProgressMode::kLive : ProgressMode::kPlain;
}

std::string minutes_seconds(double seconds) {
  const auto whole = static_cast<long long>(std::max(0.0, seconds) + 0.5);
  char text[32];
  std::snprintf(text, sizeof text, "%lld:%02lld", whole / 60, whole % 60);
  return text;
}

}  // namespace

ProgressLine::ProgressLine(ProgressMode mode, int64_t log_every, std::FILE* out)
    : mode_(resolve(mode, out)), log_every_(std::max<int64_t>(log_every, 1)), out_(out) {}

void ProgressLine::start_epoch(int64_t epoch, int64_t epochs, int64_t batches,
                               int64_t first_batch) {
  epoch_ = epoch;
  epochs_ = epochs;
  batches_ = batches;
  first_batch_ = first_batch;
  started_ = last_shown_ = Clock::now();
}

bool ProgressLine::due(int64_t done) const {
  switch (mode_) {
    case ProgressMode::kLive:
      return Clock::now() - last_shown_ >= kLiveInterval || done == batches_;
    case ProgressMode::kPlain: return done % log_every_ == 0 && done != batches_;
    default: return false;
  }
}

void ProgressLine::show(int64_t done, double loss, double rate) {
  last_shown_ = Clock::now();
  // The pace of this pass so far, times the batches left.
  const double elapsed = std::chrono::duration<double>(last_shown_ - started_).count();
  const int64_t done_this_pass = done - first_batch_;
  const double eta = done_this_pass > 0 ? elapsed / static_cast<double>(done_this_pass) *
                                              static_cast<double>(batches_ - done)
                                        : 0;
  if (mode_ == ProgressMode::kLive) {
    const int filled = batches_ > 0 ? static_cast<int>(kBarWidth * done / batches_) : kBarWidth;
    std::string bar(static_cast<size_t>(filled), '#');
    bar.append(static_cast<size_t>(kBarWidth - filled), '.');
    std::fprintf(out_, "\r\033[2Kepoch %lld/%lld [%s] %lld/%lld  loss %.4f  %.0f %s/s  eta %s",
                 static_cast<long long>(epoch_), static_cast<long long>(epochs_), bar.c_str(),
                 static_cast<long long>(done), static_cast<long long>(batches_), loss, rate,
                 unit_.c_str(), minutes_seconds(eta).c_str());
    line_open_ = true;
  } else {
    std::fprintf(out_, "epoch %lld/%lld step %lld/%lld loss %.4f %.0f %s/s eta %.0fs\n",
                 static_cast<long long>(epoch_), static_cast<long long>(epochs_),
                 static_cast<long long>(done), static_cast<long long>(batches_), loss, rate,
                 unit_.c_str(), eta);
  }
  std::fflush(out_);
}

void ProgressLine::end_epoch() {
  if (line_open_) std::fprintf(out_, "\r\033[2K");
  line_open_ = false;
  std::fflush(out_);
}

}  // namespace minidl::train
