#pragma once
// What the workers of one MpiProcessGroup tell each other beside the collectives, on a
// communicator of their own (Note [Collective timeouts], mpi_process_group.h): where each one
// is, which a rank whose collective timed out asks for (mpi_diagnosis.h), and that a rank has
// left the job, after how many collectives (the leave protocol). Every call comes from the
// group's worker thread, and polls: none waits inside MPI for a peer.
#include <mpi.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <list>
#include <map>
#include <vector>

#include "minidl/distributed/mpi_diagnosis.h"

namespace minidl::distributed::detail {

class MpiControlChannel {
 public:
  // `control`: the workers' own communicator, on which this rank is `rank` of `size`.
  MpiControlChannel(MPI_Comm control, int rank, int size);
  MpiControlChannel(const MpiControlChannel&) = delete;
  MpiControlChannel& operator=(const MpiControlChannel&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Starts listening to the peers.
  void open();
  // Answers the peers' status requests with `mine`, records their replies and leaving notices,
  // and retires the sends that have gone.
  void service(const CollectiveProgress& mine);
  // Asks every peer that has not left where it is; the answers arrive through service().
  void request_status(int64_t entered);

  // rank -> collectives it completed before it left the job.
  const std::map<int, int64_t>& left_after() const { return left_after_; }
  // The answers to the last request_status().
  const std::map<int, CollectiveProgress>& status_replies() const { return status_replies_; }

  // The leave protocol, in three steps. First: tells every peer that this rank leaves after
  // completing `completed` collectives.
  void announce_leaving(int64_t completed);
  // Then, unless the group is broken: waits until every peer has left too (`timeout` at most),
  // answering them meanwhile with `mine`. Returns the peers that did not leave in time.
  std::vector<int> wait_for_peers_to_leave(const CollectiveProgress& mine,
                                           std::chrono::milliseconds timeout);
  // Last: tries to deliver what is still being sent (kLeavingWait, 1 s, at most), then stops
  // listening.
  void close(const CollectiveProgress& mine);

 private:
  // A message's type is its tag; it carries up to three numbers.
  enum Tag : int { kStatusRequest = 1, kStatusReply = 2, kLeaving = 3 };
  using Message = std::array<int64_t, 3>;
  struct PendingSend {
    Message message;
    MPI_Request request = MPI_REQUEST_NULL;
  };

  void post_receive();
  void send(int peer, Tag tag, Message message);
  bool every_peer_left() const;

  MPI_Comm control_;
  int rank_;
  int size_;
  Message received_{};
  MPI_Request receive_ = MPI_REQUEST_NULL;
  std::list<PendingSend> pending_sends_;  // a list: MPI holds pointers into the messages
  std::map<int, int64_t> left_after_;
  std::map<int, CollectiveProgress> status_replies_;
};

}  // namespace minidl::distributed::detail
