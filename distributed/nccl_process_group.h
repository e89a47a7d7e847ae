#pragma once
// NcclProcessGroup: collectives on CUDA tensors of one device, over NCCL (built when CUDA and
// NCCL are found: the CMake variable MINIDL_WITH_NCCL; without them create() throws).
//
// Streams: each collective runs on the group's own communication stream, after an event
// recorded on the caller's current stream, so it sees the values the caller's kernels
// produce; Work::wait() makes the caller's current stream wait for an event recorded after
// the collective. Neither blocks the host. Tensors used by a collective are marked as used on
// the communication stream (record_stream), so the caching allocator does not hand their
// memory out again before the collective has run.
//
// Faults: a watchdog thread polls every pending collective's event and
// ncclCommGetAsyncError. A collective not finished `timeout` after it was queued, a query of
// its event that fails (a fault on the device, such as a kernel's trap), or an asynchronous
// NCCL error, aborts the communicator (ncclCommAbort, which also ends the kernels waiting for
// peers) and breaks the group: the error, naming the collective, is logged at once, and wait()
// and every later collective throw it. Nothing thrown leaves the watchdog thread
// (distributed/collective_watch.h).
#include <memory>

#include "minidl/distributed/process_group.h"

namespace minidl::distributed {

class NcclProcessGroup final : public ProcessGroup {
 public:
  // A communicator over every rank of `bootstrap` (rank 0's ncclUniqueId is broadcast over
  // it), on CUDA device `device`. Collective: every rank of `bootstrap` calls it.
  static std::shared_ptr<NcclProcessGroup> create(ProcessGroup& bootstrap, int device,
                                                  ProcessGroupOptions options = {});
  ~NcclProcessGroup() override;

  int rank() const override;
  int size() const override;
  std::string backend_name() const override { return "nccl"; }
  std::string failure() const override;

  std::shared_ptr<Work> all_reduce_async(const Tensor& tensor, ReduceOp op) override;
  std::shared_ptr<Work> broadcast_async(const Tensor& tensor, int root) override;
  std::shared_ptr<Work> all_gather_async(const Tensor& output, const Tensor& input) override;
  std::shared_ptr<Work> reduce_scatter_async(const Tensor& output, const Tensor& input,
                                             ReduceOp op) override;
  // An all-reduce of one element on the device, waited for by the host.
  std::shared_ptr<Work> barrier_async() override;

  struct Impl;  // nccl_process_group.cpp

 private:
  explicit NcclProcessGroup(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace minidl::distributed
