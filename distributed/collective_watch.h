#pragma once
// What NcclProcessGroup's watchdog decides each time it looks at its queued collectives, apart
// from CUDA and NCCL so that it is tested on any machine (tests/distributed/
// collective_watch_test.cpp).
//
// The watchdog is a thread of its own: an exception leaving it would end the process
// (std::terminate) without aborting the communicator, and the peers would wait for the whole
// timeout. So a failing query is caught here and becomes the group's error, like a timeout.
#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace minidl::distributed {

// A queued collective, watched until it has finished.
struct WatchedCollective {
  // Whether the collective has finished on the device (its event has passed). May throw: a
  // CUDA error of the context (an illegal address, a kernel's __trap) surfaces in the query.
  std::function<bool()> finished;
  std::chrono::steady_clock::time_point deadline;
  // What it is, for messages: "all_reduce of 1024 x float32 (collective #3 of the nccl
  // process group)".
  std::string description;
};

// One look at `watched`: drops the collectives that have finished, and returns the error that
// must break the group, or an empty string. The error is the first collective whose query
// threw, or else the first one past its deadline; it names the collective and `rank`, and a
// timeout says how long `timeout` was.
std::string check_watched_collectives(std::vector<WatchedCollective>& watched,
                                      std::chrono::steady_clock::time_point now, int rank,
                                      std::chrono::milliseconds timeout);

// The error of a collective whose event query threw `cause`, as the watchdog and Work::wait()
// report it: "rank 1: all_reduce of ... failed on the device: <cause>".
std::string collective_failed_on_device(int rank, const std::string& description,
                                        const std::string& cause);

}  // namespace minidl::distributed
