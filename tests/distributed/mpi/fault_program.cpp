// A small data-parallel training run in which one rank fails on purpose, for
// run_fault_case.sh. Usage, under mpirun:
//
//   fault_program CASE FAILING_RANK [TAG]
//
// CASE: exit0, exit1, abort, sigkill, sigterm (the failing rank does that at step 10), desync
// (at step 10 every other rank calls an extra all_reduce, which the failing rank skips; it then
// sleeps, as if stuck in data loading), or none (a clean run). TAG is ignored: the script uses
// it to find leftover processes. Just before the fault, the failing rank prints
// "FAULT rank R at T" (T: seconds since the epoch).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "minidl/core/error.h"
#include "minidl/distributed/distributed.h"
#include "minidl/nn/modules/linear.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "minidl/optim/sgd.h"

namespace {

constexpr int kFaultStep = 10;
constexpr int kSteps = 400;  // 8 s of training at 20 ms per step when nothing fails

void announce_fault(int rank, const char* what) {
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::fprintf(stderr, "FAULT rank %d at %.3f: %s\n", rank, now, what);
  std::fflush(stderr);
}

int train(const std::string& fault, int failing_rank) {
  using namespace minidl;
  distributed::init();
  const int rank = distributed::rank();
  manual_seed(1);
  auto model = nn::Linear(16, 4);
  distributed::DistributedDataParallel ddp(model);
  optim::SGD optimizer(model->parameters(), optim::SGDOptions(0.01));
  auto group = distributed::default_process_group();
  for (int step = 0; step < kSteps; ++step) {
    if (step == kFaultStep && rank == failing_rank) {
      announce_fault(rank, fault.c_str());
      if (fault == "exit0") std::exit(0);
      if (fault == "exit1") std::exit(1);
      if (fault == "abort") std::abort();
      if (fault == "sigkill") raise(SIGKILL);
      if (fault == "sigterm") raise(SIGTERM);
      if (fault == "desync") {
        std::this_thread::sleep_for(std::chrono::minutes(10));
        return 3;
      }
    }
    if (step == kFaultStep && fault == "desync" && rank != failing_rank) {
      Tensor metric = ones({1});
      group->all_reduce(metric);
    }
    optimizer.zero_grad();
    ddp(rand({8, 16})).sum().backward();
    optimizer.step();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::fprintf(stderr, "rank %d: finished %d steps\n", rank, kSteps);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s exit0|exit1|abort|sigkill|sigterm|desync|none RANK [TAG]\n",
                 argv[0]);
    return 2;
  }
  try {
    const int result = train(argv[1], std::atoi(argv[2]));
    minidl::distributed::finalize();
    return result;
  } catch (const std::exception& e) {
    // Library errors (a timeout, a peer that left) end up here; returning runs finalize() at
    // exit, which ends the job with MPI_Abort after such an error.
    std::fprintf(stderr, "[rank %d] training failed: %s\n",
                 minidl::distributed::is_initialized() ? minidl::distributed::rank() : -1,
                 e.what());
    return 1;
  }
}
