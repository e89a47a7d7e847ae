// Bus bandwidth of all_reduce, as nccl-tests reports it, one JSON line per size:
//
//   algbw = bytes / time           (time: one all_reduce of `bytes`, the mean over iterations)
//   busbw = algbw * 2 (n - 1) / n  (n ranks: what a ring moves per link, comparable across n)
//
// for f32 tensors of 4 KiB to 64 MiB (x4 steps), over the MPI group on CPU tensors, and over
// NCCL on CUDA tensors when minidl has NCCL and the rank has a GPU. Run under mpirun:
//
//   mpirun --oversubscribe -np 2 build/tools/bench_allreduce [--min-bytes N] [--max-bytes N]
//       [--seconds S]      (time per size, default 0.5 s; at least 5 iterations)
//
// Rank 0 prints the lines; every rank checks the result of the last all_reduce.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "minidl/core/cuda/device.h"
#include "minidl/core/error.h"
#include "minidl/distributed/distributed.h"

namespace {

using namespace minidl;
using Clock = std::chrono::steady_clock;

struct BenchOptions {
  int64_t min_bytes = 4 << 10;
  int64_t max_bytes = 64 << 20;
  double seconds = 0.5;
};

BenchOptions parse(int argc, char** argv) {
  BenchOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    MINIDL_CHECK(i + 1 < argc, "bench_allreduce: ", flag, " needs a value");
    const char* value = argv[++i];
    if (flag == "--min-bytes")
      options.min_bytes = std::atoll(value);
    else if (flag == "--max-bytes")
      options.max_bytes = std::atoll(value);
    else if (flag == "--seconds")
      options.seconds = std::atof(value);
    else
      MINIDL_CHECK(false, "bench_allreduce: unknown flag ", flag,
                   "; expected --min-bytes, --max-bytes or --seconds");
  }
  return options;
}

void bench(distributed::ProcessGroup& group, Device device, const BenchOptions& options) {
  const int n = group.size();
  for (int64_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= 4) {
    const int64_t numel = bytes / 4;
    Tensor data = ones({numel}, TensorOptions(kFloat32).device(device));
    group.all_reduce(data);  // warm-up (and connection setup)
    group.barrier();
    // Every rank runs the same number of iterations: rank 0 decides from one timed run.
    Tensor iterations = zeros({1}, TensorOptions(kFloat32).device(device));
    if (group.rank() == 0) {
      const auto start = Clock::now();
      group.all_reduce(data);
      const double one = std::chrono::duration<double>(Clock::now() - start).count();
      iterations.fill_(std::clamp(options.seconds / std::max(one, 1e-6), 5.0, 10000.0));
    } else {
      group.all_reduce(data);
    }
    group.broadcast(iterations, 0);
    const int count = static_cast<int>(to_vector<float>(iterations)[0]);
    data.fill_(1.0);
    group.barrier();
    const auto start = Clock::now();
    for (int k = 0; k < count; ++k)
      group.all_reduce_async(data, distributed::ReduceOp::Average)->wait();
    if (device.is_cuda()) cuda::synchronize();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count() / count;
    MINIDL_CHECK(to_vector<float>(data.narrow(0, numel - 1, 1))[0] == 1.0f,
                 "bench_allreduce: the average of ones is not one");
    if (group.rank() != 0) continue;
    const double algbw = static_cast<double>(bytes) / seconds / 1e9;
    std::printf(
        "{\"backend\": \"%s\", \"ranks\": %d, \"bytes\": %lld, \"iterations\": %d, "
        "\"time_us\": %.1f, \"algbw_gbps\": %.3f, \"busbw_gbps\": %.3f}\n",
        group.backend_name().c_str(), n, static_cast<long long>(bytes), count, seconds * 1e6, algbw,
        algbw * 2.0 * (n - 1) / n);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const BenchOptions options = parse(argc, argv);
    distributed::init();
    bench(*distributed::default_process_group(Device(kCPU)), Device(kCPU), options);
    if (cuda::is_available() && distributed::world_size() > 1) {
      const Device gpu(kCUDA, cuda::current_device());
      auto group = distributed::default_process_group(gpu);
      if (group->backend_name() == "nccl") bench(*group, gpu, options);
    }
    distributed::finalize();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_allreduce: %s\n", e.what());
    return 1;
  }
}
