#include "minidl/distributed/termination_report.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace minidl::distributed {

namespace {

// Fixed-size state the handler reads: no allocation, no locks in a signal handler.
constexpr int kMaxPeers = 1024;
struct ReportState {
  int rank = -1;
  int peer_count = 0;
  PeerProcess peers[kMaxPeers];
  struct sigaction previous {};
};
ReportState report_state;
volatile sig_atomic_t handler_installed = 0;

// Appends `text` to buffer[*length] (bounded), async-signal-safe.
void append(char* buffer, size_t capacity, size_t* length, const char* text) {
  for (; *text != '\0' && *length + 1 < capacity; ++text) buffer[(*length)++] = *text;
}
void append_number(char* buffer, size_t capacity, size_t* length, long value) {
  char digits[24];
  int count = 0;
  const bool negative = value < 0;
  unsigned long magnitude = negative ? -static_cast<unsigned long>(value) : value;
  do {
    digits[count++] = static_cast<char>('0' + magnitude % 10);
    magnitude /= 10;
  } while (magnitude != 0 && count < 23);
  if (negative) append(buffer, capacity, length, "-");
  while (count > 0 && *length + 1 < capacity) buffer[(*length)++] = digits[--count];
}

void on_sigterm(int signal_number, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  char line[2048];
  size_t length = 0;
  append(line, sizeof line, &length, "[rank ");
  append_number(line, sizeof line, &length, report_state.rank);
  append(line, sizeof line, &length, "] minidl: terminated by SIGTERM");
  if (info != nullptr && info->si_pid != 0) {
    append(line, sizeof line, &length, " from pid ");
    append_number(line, sizeof line, &length, info->si_pid);
  }
  append(line, sizeof line, &length, " (mpirun ends every rank when one fails)");
  bool any_gone = false;
  for (int i = 0; i < report_state.peer_count; ++i) {
    const PeerProcess& peer = report_state.peers[i];
    if (!peer.same_host || peer.rank == report_state.rank) continue;
    if (kill(peer.pid, 0) == 0 || errno != ESRCH) continue;
    append(line, sizeof line, &length, any_gone ? ", " : "; ranks already gone on this host: ");
    append_number(line, sizeof line, &length, peer.rank);
    append(line, sizeof line, &length, " (pid ");
    append_number(line, sizeof line, &length, peer.pid);
    append(line, sizeof line, &length, ")");
    any_gone = true;
  }
  if (!any_gone) append(line, sizeof line, &length, "; no other rank on this host is gone yet");
  append(line, sizeof line, &length, "\n");
  ssize_t ignored = write(STDERR_FILENO, line, length);
  (void)ignored;
  errno = saved_errno;

  const struct sigaction& previous = report_state.previous;
  if ((previous.sa_flags & SA_SIGINFO) && previous.sa_sigaction != nullptr) {
    previous.sa_sigaction(signal_number, info, context);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN &&
             previous.sa_handler != nullptr) {
    previous.sa_handler(signal_number);
  } else {
    // Die of SIGTERM, as without this handler, so mpirun reports the signal.
    signal(signal_number, SIG_DFL);
    raise(signal_number);
  }
}

}  // namespace

void install_termination_report(int rank, const std::vector<PeerProcess>& peers) {
  report_state.rank = rank;
  report_state.peer_count = 0;
  for (const PeerProcess& peer : peers) {
    if (report_state.peer_count == kMaxPeers) break;
    report_state.peers[report_state.peer_count++] = peer;
  }
  if (handler_installed) return;
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_sigaction = on_sigterm;
  action.sa_flags = SA_SIGINFO | SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, &report_state.previous);
  handler_installed = 1;
}

}  // namespace minidl::distributed
