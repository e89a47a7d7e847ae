#pragma once
// What a rank whose collective timed out says about its peers (Note [Collective timeouts],
// mpi_process_group.h): which ranks have not arrived and what they are doing, which called a
// different collective, which did not answer (dead, or stuck outside MPI), which have left the
// job. Asking is MPI (the control channel); the explanation is plain text from the answers, so
// it is tested apart (tests/distributed/mpi/diagnosis_mpi.cpp).
#include <chrono>
#include <cstdint>
#include <map>
#include <string>

namespace minidl::distributed::detail {

class MpiControlChannel;

inline constexpr int64_t kNotInCollective = -1;

// How far one worker has got: collectives started and finished, and the kind of the one it is
// in (CollectiveKind as a number, or kNotInCollective). A worker sends it as its status.
struct CollectiveProgress {
  int64_t entered = 0;
  int64_t completed = 0;
  int64_t current_kind = kNotInCollective;
};

// How long a timed-out rank waits for its peers to say where they are.
inline constexpr auto kDiagnosisWait = std::chrono::seconds(2);

// Asks every peer that has not left where it is, waits for the answers (kDiagnosisWait at most,
// answering the peers meanwhile), and explains them. `mine`: this rank, in the collective that
// timed out.
std::string diagnose_missing_ranks(MpiControlChannel& control, const CollectiveProgress& mine);

// The explanation: "ranks not in this collective: 1 3; rank 1 has not arrived: it has started 14
// collectives and is in no collective; rank 2 is in all_reduce #15 (waiting too); rank 3 did not
// answer within 2 s (dead, or stuck outside MPI)". `left_after`: rank -> collectives it
// completed before it left; `replies`: each peer that answered within `answer_wait`.
std::string explain_missing_ranks(int rank, int size, const CollectiveProgress& mine,
                                  const std::map<int, int64_t>& left_after,
                                  const std::map<int, CollectiveProgress>& replies,
                                  std::chrono::duration<double> answer_wait);

}  // namespace minidl::distributed::detail
