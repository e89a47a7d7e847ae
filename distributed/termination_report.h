#pragma once
// The SIGTERM report of a rank that mpirun ends because another rank failed (init.h,
// InitOptions::report_termination). mpirun's own message names the rank that failed; this
// makes every survivor say it too, as far as it can see: the handler checks, with kill(pid, 0),
// which ranks on the same host have already exited, writes one line to stderr, e.g.
//
//   [rank 0] minidl: terminated by SIGTERM (mpirun ends every rank when one fails); ranks
//   already gone on this host: 1 (pid 4242)
//
// and then dies of SIGTERM as it would have (or calls the handler installed before). A rank
// that is sent SIGTERM itself names itself the same way. Only async-signal-safe calls run in
// the handler; the message is prepared here.
#include <sys/types.h>

#include <vector>

namespace minidl::distributed {

struct PeerProcess {
  int rank = 0;
  pid_t pid = 0;
  bool same_host = false;
};

// Installs the handler (once; later calls update the peers).
void install_termination_report(int rank, const std::vector<PeerProcess>& peers);

}  // namespace minidl::distributed
