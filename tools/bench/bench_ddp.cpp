// Where the time of a DistributedDataParallel step goes, on CPU ranks under mpirun: one JSON line
// per bucket size with the medians of
//
//   backward_ms      backward of the plain model (world size 1: no hooks, no communication)
//   allreduce_ms     the all-reduces of DDP's gradient buckets alone (flat buffers of the same
//                    sizes, launched in bucket order and waited for, as the reducer does)
//   ddp_backward_ms  backward of the DDP model: the same all-reduces, launched as buckets fill,
//                    overlapping the rest of backward; it returns with the averaged gradients
//   hidden_fraction  (backward + allreduce - ddp_backward) / allreduce: the share of the
//                    communication that overlap hid (0: none, 1: all)
//
// and forward_ms (the plain model's forward, for scale). The model is an MLP of --layers
// Linear(--width, --width) layers with ReLU between, a batch of --batch random rows per rank and
// the mean of the squared output as the loss. Every measurement starts and ends at a barrier, so
// it is the slowest rank's time; the three are interleaved (every repeat measures every bucket
// size), and each figure is the median over --repeats.
//
//   mpirun -np 2 -x OMP_NUM_THREADS=1 build/tools/bench_ddp [--width N] [--layers N] [--batch N]
//       [--buckets 1,5,25,100] [--repeats N] [--threads N]
//
// --buckets: bucket_cap_mb values (MiB, as DistributedDataParallelOptions); --threads: CPU
// threads per rank (default 1, so that ranks do not fight over cores).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "minidl/minidl.h"

namespace {

using namespace minidl;
using Clock = std::chrono::steady_clock;

struct BenchOptions {
  int64_t width = 1024;
  int64_t layers = 8;
  int64_t batch = 64;
  std::vector<double> bucket_cap_mb = {1, 5, 25, 100};
  int repeats = 7;
  int64_t threads = 1;
};

int64_t positive_integer(const std::string& flag, const char* value) {
  char* end = nullptr;
  const long long parsed = std::strtoll(value, &end, 10);
  MINIDL_CHECK(end != value && *end == '\0' && parsed >= 1, "bench_ddp: ", flag,
               ": expected an integer >= 1, got ", value);
  return parsed;
}

std::vector<double> bucket_sizes(const char* value) {
  std::vector<double> sizes;
  std::stringstream list(value);
  std::string item;
  while (std::getline(list, item, ',')) {
    char* end = nullptr;
    const double size = std::strtod(item.c_str(), &end);
    MINIDL_CHECK(!item.empty() && *end == '\0' && size > 0, "bench_ddp: --buckets: expected a ",
                 "comma-separated list of sizes in MiB > 0, got ", value);
    sizes.push_back(size);
  }
  MINIDL_CHECK(!sizes.empty(), "bench_ddp: --buckets: expected at least one size, got ", value);
  return sizes;
}

BenchOptions parse(int argc, char** argv) {
  BenchOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    MINIDL_CHECK(i + 1 < argc, "bench_ddp: ", flag, " needs a value");
    const char* value = argv[++i];
    if (flag == "--width")
      options.width = positive_integer(flag, value);
    else if (flag == "--layers")
      options.layers = positive_integer(flag, value);
    else if (flag == "--batch")
      options.batch = positive_integer(flag, value);
    else if (flag == "--buckets")
      options.bucket_cap_mb = bucket_sizes(value);
    else if (flag == "--repeats")
      options.repeats = static_cast<int>(positive_integer(flag, value));
    else if (flag == "--threads")
      options.threads = positive_integer(flag, value);
    else
      MINIDL_CHECK(false, "bench_ddp: unknown flag ", flag,
                   "; expected --width, --layers, --batch, --buckets, --repeats or --threads");
  }
  return options;
}

// The same weights on every call (and every rank): the seed is reset first.
nn::Sequential make_mlp(const BenchOptions& options) {
  manual_seed(0);
  nn::Sequential mlp;
  for (int64_t layer = 0; layer < options.layers; ++layer) {
    if (layer > 0) mlp->push_back(nn::ReLU());
    mlp->push_back(nn::Linear(options.width, options.width));
  }
  return mlp;
}

Tensor loss_of(const Tensor& output) { return mean(square(output)); }

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

// Milliseconds of `work`, from a barrier to a barrier: the slowest rank's time.
template <class Work>
double timed_ms(distributed::ProcessGroup& group, const Work& work) {
  group.barrier();
  const auto start = Clock::now();
  work();
  group.barrier();
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// One DDP replica with its bucket cap, and flat buffers of its buckets' sizes for the
// all-reduce-alone measurement.
struct Replica {
  double bucket_cap_mb = 0;
  nn::Sequential model;
  std::unique_ptr<distributed::DistributedDataParallel> ddp;
  std::vector<Tensor> bucket_buffers;
  std::vector<double> allreduce_ms, ddp_backward_ms;
};

Replica make_replica(const BenchOptions& options, double bucket_cap_mb) {
  Replica replica;
  replica.bucket_cap_mb = bucket_cap_mb;
  replica.model = make_mlp(options);
  replica.ddp = std::make_unique<distributed::DistributedDataParallel>(
      nn::AnyModule(replica.model),
      distributed::DistributedDataParallelOptions().bucket_cap_mb(bucket_cap_mb));
  const auto parameters = replica.model->named_parameters();
  for (const auto& bucket : replica.ddp->bucket_parameter_names()) {
    int64_t numel = 0;
    for (const auto& name : bucket) numel += parameters[name].numel();
    replica.bucket_buffers.push_back(ones({numel}));
  }
  return replica;
}

void all_reduce_buckets(distributed::ProcessGroup& group, const std::vector<Tensor>& buffers) {
  std::vector<std::shared_ptr<distributed::Work>> pending;
  pending.reserve(buffers.size());
  for (const Tensor& buffer : buffers)
    pending.push_back(group.all_reduce_async(buffer, distributed::ReduceOp::Average));
  for (const auto& work : pending) work->wait();
}

void bench(const BenchOptions& options) {
  auto group = distributed::default_process_group(Device(kCPU));
  nn::Sequential plain = make_mlp(options);
  std::vector<Replica> replicas;
  replicas.reserve(options.bucket_cap_mb.size());
  for (double cap : options.bucket_cap_mb) replicas.push_back(make_replica(options, cap));
  manual_seed(1000 + static_cast<uint64_t>(group->rank()));  // each rank its own batch
  const Tensor input = randn({options.batch, options.width});
  int64_t parameter_count = 0;
  for (const Tensor& parameter : plain->parameters()) parameter_count += parameter.numel();

  std::vector<double> forward_ms, backward_ms;
  // Repeat 0 warms up (first-touch allocations, connection setup) and is not counted.
  for (int repeat = 0; repeat <= options.repeats; ++repeat) {
    for (Replica& replica : replicas) {
      plain->zero_grad();
      Tensor loss;
      const double forward = timed_ms(*group, [&] { loss = loss_of(plain->forward(input)); });
      const double backward = timed_ms(*group, [&] { loss.backward(); });
      const double allreduce =
          timed_ms(*group, [&] { all_reduce_buckets(*group, replica.bucket_buffers); });
      replica.model->zero_grad();
      Tensor ddp_loss = loss_of((*replica.ddp)(input));
      const double ddp_backward = timed_ms(*group, [&] { ddp_loss.backward(); });
      if (repeat == 0) continue;
      forward_ms.push_back(forward);
      backward_ms.push_back(backward);
      replica.allreduce_ms.push_back(allreduce);
      replica.ddp_backward_ms.push_back(ddp_backward);
    }
  }

  if (group->rank() != 0) return;
  const double forward = median(forward_ms), backward = median(backward_ms);
  for (const Replica& replica : replicas) {
    const double allreduce = median(replica.allreduce_ms);
    const double ddp_backward = median(replica.ddp_backward_ms);
    std::printf(
        "{\"ranks\": %d, \"threads_per_rank\": %lld, \"parameters\": %lld, \"gradient_mib\": "
        "%.1f, \"batch_per_rank\": %lld, \"bucket_cap_mb\": %g, \"buckets\": %zu, \"repeats\": "
        "%d, \"forward_ms\": %.2f, \"backward_ms\": %.2f, \"allreduce_ms\": %.2f, "
        "\"ddp_backward_ms\": %.2f, \"hidden_fraction\": %.3f}\n",
        group->size(), static_cast<long long>(options.threads),
        static_cast<long long>(parameter_count), parameter_count * 4.0 / (1 << 20),
        static_cast<long long>(options.batch), replica.bucket_cap_mb, replica.bucket_buffers.size(),
        options.repeats, forward, backward, allreduce, ddp_backward,
        (backward + allreduce - ddp_backward) / allreduce);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const BenchOptions options = parse(argc, argv);
    set_num_threads(options.threads);
    distributed::init();
    MINIDL_CHECK(distributed::world_size() > 1,
                 "bench_ddp: run it under mpirun with 2 or more ranks (world size is 1: DDP "
                 "would not communicate)");
    bench(options);
    distributed::finalize();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_ddp: %s\n", e.what());
    return 1;
  }
}
