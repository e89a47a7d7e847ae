#include "minidl/distributed/mpi_diagnosis.h"

#include <sstream>
#include <thread>
#include <vector>

#include "minidl/distributed/mpi_collective.h"
#include "minidl/distributed/mpi_control_channel.h"

namespace minidl::distributed::detail {

std::string diagnose_missing_ranks(MpiControlChannel& control, const CollectiveProgress& mine) {
  using Clock = std::chrono::steady_clock;
  control.request_status(mine.entered);
  const Clock::time_point deadline = Clock::now() + kDiagnosisWait;
  while (control.status_replies().size() + control.left_after().size() + 1 <
             static_cast<size_t>(control.size()) &&
         Clock::now() < deadline) {
    control.service(mine);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return explain_missing_ranks(control.rank(), control.size(), mine, control.left_after(),
                               control.status_replies(), kDiagnosisWait);
}

std::string explain_missing_ranks(int rank, int size, const CollectiveProgress& mine,
                                  const std::map<int, int64_t>& left_after,
                                  const std::map<int, CollectiveProgress>& replies,
                                  std::chrono::duration<double> answer_wait) {
  std::vector<int> missing;
  std::ostringstream details;
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    if (auto left = left_after.find(peer); left != left_after.end()) {
      missing.push_back(peer);
      details << "; rank " << peer << " has left the job after completing " << left->second
              << " collectives";
      continue;
    }
    auto reply = replies.find(peer);
    if (reply == replies.end()) {
      missing.push_back(peer);
      details << "; rank " << peer << " did not answer within " << answer_wait.count()
              << " s (dead, or stuck outside MPI)";
      continue;
    }
    const CollectiveProgress& theirs = reply->second;
    const std::string where = theirs.current_kind == kNotInCollective
                                  ? std::string("is in no collective")
                                  : std::string("is in ") + kind_name(theirs.current_kind) + " #" +
                                        std::to_string(theirs.entered);
    if (theirs.entered < mine.entered ||
        (theirs.entered == mine.entered && theirs.current_kind == kNotInCollective &&
         theirs.completed < mine.entered)) {
      missing.push_back(peer);
      details << "; rank " << peer << " has not arrived: it has started " << theirs.entered
              << " collectives and " << where;
    } else if (theirs.entered == mine.entered && theirs.current_kind != mine.current_kind) {
      missing.push_back(peer);
      details << "; rank " << peer << " called a different collective: it " << where;
    } else if (theirs.current_kind == kNotInCollective) {
      details << "; rank " << peer << " has completed it and " << where;
    } else {
      details << "; rank " << peer << " " << where << " (waiting too)";
    }
  }
  std::ostringstream out;
  if (missing.empty()) {
    out << "every rank answered that it is in this collective";
  } else {
    out << "rank" << (missing.size() > 1 ? "s" : "") << " not in this collective:";
    for (int peer : missing) out << " " << peer;
  }
  return out.str() + details.str();
}

}  // namespace minidl::distributed::detail
