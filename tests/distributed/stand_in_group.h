#pragma once
// A ProcessGroup that is rank `rank` of `size` for what needs no communication (ZeRO's partition,
// loading a shard of a whole state), so that one process can test every rank's side. Any
// collective is an error.
#include <memory>
#include <string>

#include "minidl/core/error.h"
#include "minidl/distributed/process_group.h"

namespace minidl::testing {

class StandInGroup final : public distributed::ProcessGroup {
 public:
  StandInGroup(int rank, int size) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend_name() const override { return "stand-in"; }
  std::shared_ptr<distributed::Work> all_reduce_async(const Tensor&,
                                                      distributed::ReduceOp) override {
    return refuse();
  }
  std::shared_ptr<distributed::Work> broadcast_async(const Tensor&, int) override {
    return refuse();
  }
  std::shared_ptr<distributed::Work> all_gather_async(const Tensor&, const Tensor&) override {
    return refuse();
  }
  std::shared_ptr<distributed::Work> reduce_scatter_async(const Tensor&, const Tensor&,
                                                          distributed::ReduceOp) override {
    return refuse();
  }
  std::shared_ptr<distributed::Work> barrier_async() override { return refuse(); }

 private:
  static std::shared_ptr<distributed::Work> refuse() {
    throw Error("StandInGroup: no collective expected");
  }
  int rank_, size_;
};

}  // namespace minidl::testing
