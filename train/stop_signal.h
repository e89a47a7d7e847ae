#pragma once
// Turns SIGINT and SIGTERM into a request to stop that a training loop polls between steps,
// so an interrupted run can finish its step and save a checkpoint instead of dying mid-write.
//
//   StopSignalGuard guard;           // installs the handlers, restores the old ones at scope end
//   while (...) { step(); if (guard.requested()) { save(); break; } }
//
// The handlers only store the signal number (async-signal-safe). They are installed with
// SA_RESETHAND, so a second Ctrl-C ends the process the usual way when the first one is not
// getting anywhere.
#include <csignal>
#include <optional>
#include <string>

namespace minidl::train {

class StopSignalGuard {
 public:
  StopSignalGuard();
  ~StopSignalGuard();
  StopSignalGuard(const StopSignalGuard&) = delete;
  StopSignalGuard& operator=(const StopSignalGuard&) = delete;

  // The signal received since the guard was made, if any.
  std::optional<int> requested() const;

 private:
  struct sigaction previous_interrupt_ {};
  struct sigaction previous_terminate_ {};
};

// "SIGINT", "SIGTERM", or "signal <n>".
std::string signal_name(int signal_number);

}  // namespace minidl::train
