// Kernel benchmark of conv2d: forward, and backward (input and weight gradients), for the
// convolution shapes of LeNet (batch 256) and CIFAR ResNet-18 (batch 128), on the CPU (im2col +
// OpenBLAS) and, when a GPU is available, on CUDA (cuDNN). Next to them, OpenBLAS sgemm of
// comparable sizes (through minidl's matmul), measured in the same run, is the CPU's ceiling.
//
//   bench_conv [--batch=N] [Google Benchmark flags, e.g. --benchmark_filter=cpu/]
//
// --batch=N (or the environment variable MINIDL_BENCH_CONV_BATCH=N) replaces every shape's
// batch size, for machines where the full batches take too long. Counters: GFLOP (printed per
// second of wall-clock time) on the CPU and TFLOP (likewise) on CUDA, with
// 2 * N * C_out * H_out * W_out * C_in / groups * kH * kW floating-point operations per forward
// and twice that per backward. On the CPU, GFLOP_per_cpu_s divides the same work by the CPU
// time of the whole process (all threads), which stays meaningful on a machine shared with
// other work. Times are wall-clock; each CUDA iteration ends with a device synchronisation.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "minidl/minidl.h"

namespace {

using namespace minidl;

// One convolution layer of a benchmarked network (square kernels, no groups).
struct ConvShape {
  std::string name;  // network.layer
  int64_t batch;
  int64_t in_channels, out_channels;
  int64_t size;  // input height = width
  int64_t kernel;
  int64_t stride;
  int64_t padding;
};

std::vector<ConvShape> network_shapes() {
  return {
      // LeNet-5 on 28x28 MNIST, batch 256.
      {"lenet.conv1", 256, 1, 6, 28, 5, 1, 2},
      {"lenet.conv2", 256, 6, 16, 14, 5, 1, 0},
      // CIFAR ResNet-18 on 32x32, batch 128 (each distinct shape once).
      {"resnet18.stem", 128, 3, 64, 32, 3, 1, 1},
      {"resnet18.layer1", 128, 64, 64, 32, 3, 1, 1},
      {"resnet18.layer2.down", 128, 64, 128, 32, 3, 2, 1},
      {"resnet18.layer2", 128, 128, 128, 16, 3, 1, 1},
      {"resnet18.layer2.proj", 128, 64, 128, 32, 1, 2, 0},
      {"resnet18.layer3.down", 128, 128, 256, 16, 3, 2, 1},
      {"resnet18.layer3", 128, 256, 256, 8, 3, 1, 1},
      {"resnet18.layer3.proj", 128, 128, 256, 16, 1, 2, 0},
      {"resnet18.layer4.down", 128, 256, 512, 8, 3, 2, 1},
      {"resnet18.layer4", 128, 512, 512, 4, 3, 1, 1},
      {"resnet18.layer4.proj", 128, 256, 512, 8, 1, 2, 0},
  };
}

int64_t output_size(const ConvShape& s) {
  return (s.size + 2 * s.padding - s.kernel) / s.stride + 1;
}

// Floating-point operations of one forward: a multiply and an add per weight tap per output.
double forward_flops(const ConvShape& s) {
  const int64_t out = output_size(s);
  return 2.0 * static_cast<double>(s.batch * s.out_channels * out * out * s.in_channels * s.kernel *
                                   s.kernel);
}

std::string describe(const ConvShape& s) {
  return std::to_string(s.in_channels) + "->" + std::to_string(s.out_channels) + " " +
         std::to_string(s.kernel) + "x" + std::to_string(s.kernel) + " s" +
         std::to_string(s.stride) + " p" + std::to_string(s.padding) + " on " +
         std::to_string(s.size) + "x" + std::to_string(s.size) + ", N=" + std::to_string(s.batch);
}

// Waits for the device after a CUDA iteration, so wall time covers the work.
void finish(const Device& device) {
  if (device.is_cuda()) cuda::synchronize();
}

// CPU time used by the whole process (every thread) so far, in seconds.
double process_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// Rate counters: GFLOP per wall-clock second on the CPU (and per second of the process's CPU
// time, `cpu_seconds` over the timed loop), TFLOP per wall-clock second on CUDA.
void add_rates(benchmark::State& state, const Device& device, double flops_per_iteration,
               double cpu_seconds) {
  if (device.is_cuda()) {
    state.counters["TFLOP"] = benchmark::Counter(flops_per_iteration * 1e-12,
                                                 benchmark::Counter::kIsIterationInvariantRate);
    return;
  }
  state.counters["GFLOP"] =
      benchmark::Counter(flops_per_iteration * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP_per_cpu_s"] =
      flops_per_iteration * 1e-9 * static_cast<double>(state.iterations()) / cpu_seconds;
}

struct ConvOperands {
  Tensor input;   // [N, C_in, H, W]
  Tensor weight;  // [C_out, C_in, k, k]
  Tensor bias;    // [C_out]
};

ConvOperands make_operands(const ConvShape& s, const Device& device) {
  const TensorOptions options = TensorOptions(kFloat32).device(device);
  return {randn({s.batch, s.in_channels, s.size, s.size}, options),
          randn({s.out_channels, s.in_channels, s.kernel, s.kernel}, options) * 0.1,
          randn({s.out_channels}, options)};
}

void bench_forward(benchmark::State& state, ConvShape s, Device device) {
  NoGradGuard no_grad;
  const ConvOperands ops = make_operands(s, device);
  const double cpu_start = process_cpu_seconds();
  for (auto _ : state) {
    Tensor out = conv2d(ops.input, ops.weight, ops.bias, s.stride, s.padding);
    finish(device);
    benchmark::DoNotOptimize(out.data_ptr());
  }
  add_rates(state, device, forward_flops(s), process_cpu_seconds() - cpu_start);
  state.SetLabel(describe(s));
}

// The backward node of one convolution run once per iteration: the input's and the weight's
// gradients (no bias, whose gradient is a reduction, not a convolution).
void bench_backward(benchmark::State& state, ConvShape s, Device device) {
  ConvOperands ops = make_operands(s, device);
  Tensor input = ops.input.requires_grad_(), weight = ops.weight.detach().requires_grad_();
  Tensor out = conv2d(input, weight, {}, s.stride, s.padding);
  const Tensor grad_output = randn(out.sizes(), TensorOptions(kFloat32).device(device));
  NoGradGuard no_grad;
  const double cpu_start = process_cpu_seconds();
  for (auto _ : state) {
    std::vector<Tensor> grads = out.grad_fn()->apply(grad_output);
    finish(device);
    benchmark::DoNotOptimize(grads[0].data_ptr());
  }
  add_rates(state, device, 2 * forward_flops(s), process_cpu_seconds() - cpu_start);
  state.SetLabel(describe(s));
}

// c [m, n] = a [m, k] @ b [k, n] through minidl's CPU matmul (OpenBLAS sgemm on each thread's
// block of rows, as the convolutions run theirs): the CPU's ceiling for the convolutions' GEMMs.
void bench_sgemm(benchmark::State& state, int64_t m, int64_t n, int64_t k) {
  const Tensor a = full({m, k}, 0.5), b = full({k, n}, 0.25);
  const double cpu_start = process_cpu_seconds();
  for (auto _ : state) {
    const Tensor c = matmul(a, b);
    benchmark::DoNotOptimize(c.data_ptr());
  }
  add_rates(state, Device(kCPU), 2.0 * static_cast<double>(m * n * k),
            process_cpu_seconds() - cpu_start);
  state.SetLabel("m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k));
}

// The batch override from --batch=N (removed from argv) or MINIDL_BENCH_CONV_BATCH.
std::optional<int64_t> batch_override(int& argc, char** argv) {
  std::optional<int64_t> batch;
  if (const char* env = std::getenv("MINIDL_BENCH_CONV_BATCH")) batch = std::atoll(env);
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--batch=", 8) == 0) {
      batch = std::atoll(argv[i] + 8);
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  if (batch && *batch <= 0) {
    std::fprintf(stderr, "bench_conv: the batch must be a positive integer\n");
    std::exit(2);
  }
  return batch;
}

void register_benchmarks(const Device& device, const std::optional<int64_t>& batch) {
  const std::string prefix = device.is_cuda() ? "cuda/" : "cpu/";
  for (ConvShape s : network_shapes()) {
    if (batch) s.batch = *batch;
    benchmark::RegisterBenchmark((prefix + "forward/" + s.name).c_str(), bench_forward, s, device)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((prefix + "backward/" + s.name).c_str(), bench_backward, s, device)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<int64_t> batch = batch_override(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  minidl::manual_seed(0);

  // The ceiling: a square GEMM, and the GEMM of one ResNet-18 layer2 chunk (C_out = 128 rows,
  // K = 128 * 3 * 3, 14 samples of 16x16 outputs).
  benchmark::RegisterBenchmark("cpu/sgemm/square", bench_sgemm, 1024, 1024, 1024)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("cpu/sgemm/resnet18.layer2", bench_sgemm, 128, 14 * 256, 1152)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  register_benchmarks(Device(kCPU), batch);
  if (minidl::cuda::is_available()) register_benchmarks(Device(kCUDA), batch);

  benchmark::AddCustomContext("cpu_threads", std::to_string(minidl::get_num_threads()));
  benchmark::AddCustomContext("batch", batch ? std::to_string(*batch) : "per network");
  benchmark::AddCustomContext("cudnn_deterministic", minidl::cudnn_deterministic() ? "on" : "off");
  benchmark::AddCustomContext("allow_tf32", minidl::allow_tf32() ? "on" : "off");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
