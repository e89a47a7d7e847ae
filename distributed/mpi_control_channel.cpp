#include "minidl/distributed/mpi_control_channel.h"

#include <iterator>
#include <thread>

#include "minidl/distributed/mpi_check.h"

namespace minidl::distributed::detail {

namespace {

using Clock = std::chrono::steady_clock;

// How often a leaving rank looks for its peers' notices.
constexpr auto kLeavingPoll = std::chrono::microseconds(50);
// How long a leaving rank tries to deliver its notices before it goes.
constexpr auto kLeavingWait = std::chrono::seconds(1);

}  // namespace

MpiControlChannel::MpiControlChannel(MPI_Comm control, int rank, int size)
    : control_(control), rank_(rank), size_(size) {}

void MpiControlChannel::open() { post_receive(); }

void MpiControlChannel::post_receive() {
  MINIDL_MPI_CHECK(MPI_Irecv(received_.data(), 3, MPI_INT64_T, MPI_ANY_SOURCE, MPI_ANY_TAG,
                             control_, &receive_));
}

void MpiControlChannel::send(int peer, Tag tag, Message message) {
  PendingSend& pending = pending_sends_.emplace_back();
  pending.message = message;
  MINIDL_MPI_CHECK(
      MPI_Isend(pending.message.data(), 3, MPI_INT64_T, peer, tag, control_, &pending.request));
}

void MpiControlChannel::service(const CollectiveProgress& mine) {
  while (true) {
    int arrived = 0;
    MPI_Status status;
    MINIDL_MPI_CHECK(MPI_Test(&receive_, &arrived, &status));
    if (!arrived) break;
    const Message message = received_;
    post_receive();
    switch (status.MPI_TAG) {
      case kStatusRequest:
        send(status.MPI_SOURCE, kStatusReply, {mine.entered, mine.completed, mine.current_kind});
        break;
      case kStatusReply:
        status_replies_[status.MPI_SOURCE] = {message[0], message[1], message[2]};
        break;
      case kLeaving: left_after_[status.MPI_SOURCE] = message[0]; break;
      default: break;
    }
  }
  for (auto it = pending_sends_.begin(); it != pending_sends_.end();) {
    int sent = 0;
    MINIDL_MPI_CHECK(MPI_Test(&it->request, &sent, MPI_STATUS_IGNORE));
    it = sent ? pending_sends_.erase(it) : std::next(it);
  }
}

void MpiControlChannel::request_status(int64_t entered) {
  status_replies_.clear();
  for (int peer = 0; peer < size_; ++peer)
    if (peer != rank_ && !left_after_.contains(peer)) send(peer, kStatusRequest, {entered, 0, 0});
}

bool MpiControlChannel::every_peer_left() const {
  return left_after_.size() + 1 >= static_cast<size_t>(size_);
}

void MpiControlChannel::announce_leaving(int64_t completed) {
  for (int peer = 0; peer < size_; ++peer)
    if (peer != rank_) send(peer, kLeaving, {completed, 0, 0});
}

std::vector<int> MpiControlChannel::wait_for_peers_to_leave(const CollectiveProgress& mine,
                                                            std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  while (!every_peer_left() && Clock::now() < deadline) {
    service(mine);
    std::this_thread::sleep_for(kLeavingPoll);
  }
  std::vector<int> stayed;
  for (int peer = 0; peer < size_; ++peer)
    if (peer != rank_ && !left_after_.contains(peer)) stayed.push_back(peer);
  return stayed;
}

void MpiControlChannel::close(const CollectiveProgress& mine) {
  const Clock::time_point send_deadline = Clock::now() + kLeavingWait;
  while (!pending_sends_.empty() && Clock::now() < send_deadline) {
    service(mine);
    std::this_thread::yield();
  }
  for (PendingSend& pending : pending_sends_) MPI_Request_free(&pending.request);
  pending_sends_.clear();
  MPI_Cancel(&receive_);
  MPI_Wait(&receive_, MPI_STATUS_IGNORE);
}

}  // namespace minidl::distributed::detail
