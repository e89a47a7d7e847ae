#include "minidl/train/stop_signal.h"

#include <atomic>

namespace minidl::train {

namespace {

// Lock-free, so the handler may store to it.
std::atomic<int> received_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void remember_signal(int signal_number) { received_signal.store(signal_number); }

void install(int signal_number, struct sigaction* previous) {
  struct sigaction action {};
  action.sa_handler = remember_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  sigaction(signal_number, &action, previous);
}

}  // namespace

StopSignalGuard::StopSignalGuard() {
  received_signal.store(0);
  install(SIGINT, &previous_interrupt_);
  install(SIGTERM, &previous_terminate_);
}

StopSignalGuard::~StopSignalGuard() {
  sigaction(SIGINT, &previous_interrupt_, nullptr);
  sigaction(SIGTERM, &previous_terminate_, nullptr);
}

std::optional<int> StopSignalGuard::requested() const {
  const int signal_number = received_signal.load();
  if (signal_number == 0) return std::nullopt;
  return signal_number;
}

std::string signal_name(int signal_number) {
  switch (signal_number) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "signal " + std::to_string(signal_number);
  }
}

}  // namespace minidl::train
