// bench: whole training steps (forward, cross-entropy, backward, SGD step) of LeNet (batch 256),
// ResNet-20 and CIFAR ResNet-18 (batch 512) on synthetic data of the real shapes, and of a GPT
// (AdamW step), on the CPU or a GPU. Prints one JSON object per configuration;
// tools/bench/bench_pytorch.py prints the same for PyTorch and tools/bench/bench_compare.py sets
// them side by side.
//
//   bench [--model lenet,resnet20,resnet18,gpt] [--device cpu|cuda|auto]
//         [--precision fp32|bf16|fp16] [--batch-size N] [--warmup 5] [--steps 20]
//         [--peak-tflops X] [--channels-last] [--cuda-graph on|off] [--tf32 on|off]
//         [--cudnn-benchmark on|off] [--profile]
//         [--profile-steps 10] [--optimizer-step sgd,adamw]
//         [--gpt-shape auto|default|shakespeare-char|gpt2-small]
//
// --model gpt is models::GPT in one of three shapes (--gpt-shape): "default" is train_gpt's
// (vocabulary 256, block 128, 4 layers, 4 heads, 128 channels, no bias; 836,736 parameters;
// batch 32), "shakespeare-char" nanoGPT's config/train_shakespeare_char.py on our 256 bytes
// (block 256, 6 layers, 6 heads, 384 channels, no bias; 10,818,432 parameters; batch 64),
// "gpt2-small" GPT-2 small as nanoGPT trains it (vocabulary 50304, block 1024, 12 layers, 12
// heads, 768 channels, biases; batch 8); "auto" takes the first on the CPU and the last on a GPU,
// as tools/bench/bench_pytorch.py does. Its batch is random tokens with the next
// ones as targets; its step is zero_grad, forward with nanoGPT's loss, backward and AdamW (lr 1e-3,
// betas 0.9, 0.99, weight decay 0.1 on the matrices and embeddings, 0 on the rest), without
// clipping. Its JSON adds "gpt_shape", "block_size" and "tokens_per_sec" ("images_per_sec"
// counts sequences).
//
// Under bf16 or fp16 the forward pass and the loss run in amp::AutocastGuard, and fp16 scales
// the loss with an amp::GradScaler, as the trainers do.
//
// On a GPU the whole step is captured in a CUDA graph by default (core/cuda/graph.h): the warm-up
// steps run eagerly on a stream of their own (at least one: it creates the optimizer's and the
// scaler's state and picks the cuDNN algorithms), one step is captured on that stream with the
// same (static) images and labels, and the timed steps are replays. --cuda-graph off times eager
// steps; the CPU has no graphs ("cuda_graph": false in the JSON).
//
// --tf32 on lets float32 convolutions and matrix products use TF32 tensor cores (set_allow_tf32,
// torch.backends.cudnn.allow_tf32 and torch.backends.cuda.matmul.allow_tf32 in PyTorch); off,
// the default, keeps float32 arithmetic. The JSON says which ("tf32").
//
// --cudnn-benchmark on lets cuDNN time its convolution algorithms during the warm-up and keep the
// fastest (set_cudnn_benchmark, torch.backends.cudnn.benchmark in PyTorch); off, the default,
// takes cuDNN's heuristics. The JSON says which ("cudnn_benchmark").
//
// Peak memory (GPU): the caching allocator's peak allocated and reserved bytes over the whole
// run of a configuration, from just before the warm-up steps to the last timed step: the eager
// warm-up's activations, and the capture's, whose blocks live on in the graph's private pool
// and are reused by every replay. (Reset after the capture instead, the peak would miss them:
// replays allocate nothing.) tools/bench/bench_pytorch.py resets at the same point.
// "peak_allocated_by_op" says what that peak held: the bytes in use at its moment per op that
// allocated them (Note [Peak memory by op] in core/cuda/memory_by_op.h), recorded through the
// warm-up and the capture, largest first; empty when the timed steps, which run unrecorded (the
// record's bookkeeping stays out of their time), raised the peak.
//
// Each step is timed on the host from its start to the end of its work (on CUDA the host waits
// for the device after each timed step: a benchmark may synchronise, the trainers do not).
// FLOPs per step are three times the forward FLOPs of the convolutions and matrix products
// (the usual count: the backward pass does twice the forward's work), counted by
// ops/flop_counter.h during one forward pass.
//
// --optimizer-step sgd,adamw: instead of training steps, times the optimizer's step alone, for
// the parameters of each --model (11.2M for ResNet-18) with fixed random gradients: "sgd" is the
// trainers' SGD (momentum 0.9, Nesterov, weight decay 5e-4), "adamw" AdamW with PyTorch's
// defaults. One JSON line per (model, optimizer) with "benchmark": "optimizer_step", the step
// times and "gb_per_s", the bytes the step must read and write (SGD: parameter, gradient and
// momentum buffer, 5 floats per parameter; AdamW: parameter, gradient and two moments, 7) over
// its median time. tools/bench/bench_compare.py --optimizer-step sets them beside torch.optim's.
//
// --profile: after the timed steps, --profile-steps more steps run while the step is recorded,
// and the JSON gains a "profile" object. On the CPU, core/profiler.h records minidl's ops:
// steps, wall_ms_per_step, op_ms_per_step (the ops' self times added up; the rest of the wall
// time is the glue between them), ops (every op recorded, most self time first: name,
// ms_per_step, calls_per_step; autograd nodes such as "Conv2dBackward" stand for the backward
// work not under a named op) and events (name, calls_per_step, thread_ms_per_step: oneDNN's
// reorders, timed on whichever threads ran them and added up). On a GPU, the steps (replays, under
// --cuda-graph on) run while CUPTI records every kernel, memory copy and memset
// (core/cupti_activity_recorder.h), and the JSON gains a "profile" object: steps,
// wall_ms_per_step, kernels_per_step, kernel_ms_per_step, busy_ms_per_step (the union of the
// device's activity intervals), gap_ms_per_step (wall - busy: the device idle, waiting for the
// host), memcpy_ms_per_step (copies and memsets) and top_kernels (the 10 kernels with the most
// time: name, ms_per_step, calls_per_step); tools/bench/device_time_summary.h defines each, and
// tools/bench/bench_pytorch.py --profile reports the same for PyTorch. Tracing slows launches a
// little, which is why the profiled steps are not the timed ones.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "minidl/core/cupti_activity_recorder.h"
#include "minidl/minidl.h"
#include "minidl/ops/cuda_batch_norm_implementations.h"
#include "minidl/ops/flop_counter.h"
#include "minidl/tools/bench/device_time_summary.h"

namespace {

using namespace minidl;

struct Configuration {
  std::string model;
  int64_t batch_size = 0;
  Device device;
  std::string precision;
  bool channels_last = false;
  bool cuda_graph = false;  // time replays of a captured step (CUDA only)
  std::string gpt_shape;    // "default" or "gpt2-small", for the GPT
};

struct Options {
  std::vector<std::string> models{"lenet", "resnet20", "resnet18"};
  std::string device = "auto";
  std::string precision = "fp32";
  int64_t batch_size = 0;  // 0: the model's own (256 for LeNet, 512 for the ResNets)
  int warmup = 5;
  int steps = 20;
  double peak_tflops = 0;
  bool channels_last = false;
  std::string cuda_graph = "on";        // on or off; applies to --device cuda only
  std::string tf32 = "off";             // on: float32 may use TF32 tensor cores
  std::string cudnn_benchmark = "off";  // on: cuDNN times its convolution algorithms
  bool profile = false;
  int profile_steps = 10;
  std::vector<std::string> optimizer_steps;  // --optimizer-step: time these optimizers alone
  std::string gpt_shape = "auto";            // auto, default, shakespeare-char or gpt2-small
};

models::GPTOptions gpt_options(const std::string& shape) {
  if (shape == "gpt2-small") return models::GPTOptions().vocab_size(50304).block_size(1024);
  if (shape == "shakespeare-char")
    return models::GPTOptions()
        .vocab_size(256)
        .block_size(256)
        .n_layer(6)
        .n_head(6)
        .n_embd(384)
        .bias(false);
  return models::GPTOptions().vocab_size(256).block_size(128).n_layer(4).n_head(4).n_embd(128).bias(
      false);
}

nn::AnyModule make_model(const std::string& name, const std::string& gpt_shape = "default") {
  if (name == "gpt") return models::GPT(gpt_options(gpt_shape));
  if (name == "lenet") return models::LeNet();
  const auto options = models::ResNetOptions().in_channels(3).num_classes(10);
  if (name == "resnet20") return models::ResNet20(options);
  return models::ResNet18(options);
}

Shape image_shape(const std::string& model) {
  return model == "lenet" ? Shape{1, 28, 28} : Shape{3, 32, 32};
}

double percentile(std::vector<double> values, double fraction) {
  std::sort(values.begin(), values.end());
  const double position = fraction * static_cast<double>(values.size() - 1);
  const auto below = static_cast<size_t>(position);
  const size_t above = std::min(below + 1, values.size() - 1);
  return values[below] + (values[above] - values[below]) * (position - static_cast<double>(below));
}

nlohmann::ordered_json to_json(const tools::DeviceTimeSummary& summary) {
  nlohmann::ordered_json profile;
  profile["steps"] = summary.steps;
  profile["wall_ms_per_step"] = summary.wall_ms_per_step;
  profile["kernels_per_step"] = summary.kernels_per_step;
  profile["kernel_ms_per_step"] = summary.kernel_ms_per_step;
  profile["busy_ms_per_step"] = summary.busy_ms_per_step;
  profile["gap_ms_per_step"] = summary.gap_ms_per_step;
  profile["memcpy_ms_per_step"] = summary.memcpy_ms_per_step;
  profile["top_kernels"] = nlohmann::ordered_json::array();
  for (const tools::KernelTime& kernel : summary.top_kernels)
    profile["top_kernels"].push_back({{"name", kernel.name},
                                      {"ms_per_step", kernel.ms_per_step},
                                      {"calls_per_step", kernel.calls_per_step}});
  return profile;
}

// --profile on the CPU: `steps` more steps with core/profiler.h recording minidl's ops.
nlohmann::ordered_json profile_host_time(const std::function<void()>& step, int steps) {
  step();  // one step first, unrecorded, as on the GPU
  OpProfiler profiler;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step();
  const double wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const std::vector<OpProfiler::Record> ops = profiler.ops();
  double op_ms = 0;
  for (const OpProfiler::Record& op : ops) op_ms += op.self_ms;
  nlohmann::ordered_json profile;
  profile["steps"] = steps;
  profile["wall_ms_per_step"] = wall_ms / steps;
  profile["op_ms_per_step"] = op_ms / steps;
  profile["ops"] = nlohmann::ordered_json::array();
  for (const OpProfiler::Record& op : ops)
    profile["ops"].push_back({{"name", op.name},
                              {"ms_per_step", op.self_ms / steps},
                              {"calls_per_step", static_cast<double>(op.calls) / steps}});
  profile["events"] = nlohmann::ordered_json::array();
  for (const OpProfiler::Record& event : profiler.events())
    profile["events"].push_back({{"name", event.name},
                                 {"calls_per_step", static_cast<double>(event.calls) / steps},
                                 {"thread_ms_per_step", event.self_ms / steps}});
  return profile;
}

// --profile on a GPU: `steps` more steps with CUPTI recording the device's work.
tools::DeviceTimeSummary profile_device_time(const std::function<void()>& step, int steps) {
  cuda::synchronize();
  CuptiActivityRecorder recorder;
  // One step first, recorded and thrown away, so that whatever starting the trace costs once
  // (CUPTI sets itself up lazily) stays out of the profiled steps.
  step();
  cuda::synchronize();
  recorder.discard_recorded();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step();
  cuda::synchronize();
  const double wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  tools::DeviceTimeSummary summary =
      tools::summarize_device_time(recorder.finish(), steps, wall_ms);
  MINIDL_CHECK(summary.kernels_per_step > 0, "bench --profile: expected CUPTI to record the ",
               "kernels of ", steps, " steps, but it recorded none (if the steps were CUDA-graph ",
               "replays, try --cuda-graph off)");
  return summary;
}

// What a step trains on: a batch of the model's inputs and targets, its loss, and its
// optimizer (SGD for the image models, AdamW as nanoGPT configures it for the GPT).
struct Workload {
  Tensor inputs, targets;
  std::function<Tensor(const Tensor& output, const Tensor& targets)> loss;
  std::unique_ptr<optim::Optimizer> optimizer;
};

Workload image_workload(const Configuration& config, nn::AnyModule& model) {
  Shape input_shape{config.batch_size};
  for (int64_t size : image_shape(config.model)) input_shape.push_back(size);
  Workload workload;
  workload.inputs = randn(input_shape).to(config.device);
  if (config.channels_last)
    workload.inputs = workload.inputs.contiguous(MemoryFormat::ChannelsLast);
  workload.targets = (rand({config.batch_size}) * 10.0).to(kInt64).to(config.device);
  workload.loss = [](const Tensor& logits, const Tensor& labels) {
    return cross_entropy(logits, labels);
  };
  workload.optimizer = std::make_unique<optim::SGD>(
      model.ptr()->parameters(),
      optim::SGDOptions(0.01).momentum(0.9).nesterov(true).weight_decay(5e-4));
  return workload;
}

Workload gpt_workload(const Configuration& config, nn::AnyModule& model) {
  const models::GPTOptions shape = gpt_options(config.gpt_shape);
  const Tensor tokens =
      (rand({config.batch_size, shape.block_size() + 1}) * static_cast<double>(shape.vocab_size()))
          .to(kInt64)
          .to(config.device);
  Workload workload;
  workload.inputs = tokens.narrow(1, 0, shape.block_size()).contiguous();
  workload.targets = tokens.narrow(1, 1, shape.block_size()).contiguous();
  workload.loss = [](const Tensor& logits, const Tensor& targets) {
    return models::GPTImpl::loss(logits, targets);
  };
  std::vector<Tensor> decayed, not_decayed;
  for (const Tensor& parameter : model.ptr()->parameters())
    (parameter.dim() >= 2 ? decayed : not_decayed).push_back(parameter);
  const auto adamw = optim::AdamWOptions(1e-3).betas({0.9, 0.99});
  workload.optimizer = std::make_unique<optim::AdamW>(
      std::vector<optim::OptimizerParamGroup>{
          optim::OptimizerParamGroup(decayed, optim::AdamWOptions(adamw).weight_decay(0.1)),
          optim::OptimizerParamGroup(not_decayed, optim::AdamWOptions(adamw).weight_decay(0.0))},
      adamw);
  return workload;
}

nlohmann::ordered_json run(const Configuration& config, const Options& options) {
  manual_seed(0);
  nn::AnyModule model = make_model(config.model, config.gpt_shape);
  model.ptr()->to(config.device);
  const bool gpt = config.model == "gpt";
  Workload workload = gpt ? gpt_workload(config, model) : image_workload(config, model);
  const Tensor& images = workload.inputs;
  const Tensor& labels = workload.targets;
  optim::Optimizer& optimizer = *workload.optimizer;

  int64_t forward_flops = 0;
  {
    NoGradGuard no_grad;  // counted in float32: the same operations as under autocast
    FlopCounter counter;
    model.forward(images);
    forward_flops = counter.flops();
  }
  const bool mixed = config.precision != "fp32";
  const DType autocast_dtype = config.precision == "fp16" ? kFloat16 : kBFloat16;
  amp::GradScaler scaler(amp::GradScalerOptions().enabled(config.precision == "fp16"));
  auto step = [&] {
    optimizer.zero_grad();
    Tensor loss;
    {
      amp::AutocastGuard autocast(autocast_dtype, mixed);
      loss = workload.loss(model.forward(images), labels);
    }
    scaler.scale(loss).backward();
    scaler.step(optimizer);
    scaler.update();
  };
  const bool on_gpu = config.device.is_cuda();
  if (on_gpu) {  // the peak from here on: warm-up, capture and timed steps (see the top)
    cuda::synchronize();
    cuda::record_memory_by_op(true);
    cuda::reset_peak_memory_stats(config.device.index);
  }
  // Capture needs a stream other than the default one; warm-up, capture and replays all run on
  // it, so the graph and the eager warm-up share one order (and that stream's cuBLAS workspace).
  std::optional<cuda::StreamGuard> on_step_stream;
  if (config.cuda_graph) {
    cuda::synchronize();  // the model and the data were made on the default stream
    on_step_stream.emplace(cuda::graph_side_stream(config.device.index));
  }
  const int warmup = config.cuda_graph ? std::max(options.warmup, 1) : options.warmup;
  for (int i = 0; i < warmup; ++i) step();
  cuda::CudaGraph graph;
  std::function<void()> timed_step = step;
  if (config.cuda_graph) {
    {
      cuda::GraphCapture capture(graph);
      step();  // queued into the graph, not run
      capture.end();
    }
    // The first replay uploads the graph's optimizer tables; untimed like the eager warm-up.
    for (int i = 0; i < warmup; ++i) graph.replay();
    timed_step = [&graph] { graph.replay(); };
  }
  if (on_gpu) {
    cuda::synchronize();
    cuda::record_memory_by_op(false);
  }
  std::vector<double> milliseconds;
  for (int i = 0; i < options.steps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    timed_step();
    if (on_gpu) cuda::synchronize();
    milliseconds.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }

  const double median_ms = percentile(milliseconds, 0.5);
  const double step_flops = 3.0 * static_cast<double>(forward_flops);
  const double tflops = step_flops / (median_ms * 1e-3) / 1e12;
  nlohmann::ordered_json result;
  result["framework"] = "minidl";
  result["model"] = config.model;
  result["batch_size"] = config.batch_size;
  result["device"] = config.device.str();
  result["precision"] = config.precision;
  result["channels_last"] = config.channels_last;
  result["cuda_graph"] = config.cuda_graph;
  result["tf32"] = allow_tf32();
  result["cudnn_benchmark"] = cudnn_benchmark();
  if (on_gpu) {  // the kernels chosen by name (ops/cuda_*_implementations.h)
    result["cuda_batch_norm"] = cuda_batch_norm() == CudaBatchNorm::Cudnn ? "cudnn" : "minidl";
    const char* attention = std::getenv("MINIDL_CUDA_ATTENTION");
    result["cuda_attention"] = attention == nullptr || *attention == '\0' ? "auto" : attention;
  }
  result["steps"] = options.steps;
  result["step_ms_median"] = median_ms;
  result["step_ms_p10"] = percentile(milliseconds, 0.1);
  result["step_ms_p90"] = percentile(milliseconds, 0.9);
  result["step_ms_min"] = *std::min_element(milliseconds.begin(), milliseconds.end());
  result["step_ms_max"] = *std::max_element(milliseconds.begin(), milliseconds.end());
  result["images_per_sec"] = static_cast<double>(config.batch_size) / (median_ms * 1e-3);
  if (gpt) {
    const int64_t block_size = gpt_options(config.gpt_shape).block_size();
    result["gpt_shape"] = config.gpt_shape;
    result["block_size"] = block_size;
    result["tokens_per_sec"] =
        static_cast<double>(config.batch_size * block_size) / (median_ms * 1e-3);
  }
  result["gflop_per_step"] = step_flops / 1e9;
  result["tflops"] = tflops;
  if (options.peak_tflops > 0) result["fraction_of_peak"] = tflops / options.peak_tflops;
  if (on_gpu) {
    const cuda::MemoryStats memory = cuda::memory_stats(config.device.index);
    result["peak_allocated_bytes"] = memory.peak_allocated_bytes;
    result["peak_reserved_bytes"] = memory.peak_reserved_bytes;
    nlohmann::ordered_json by_op = nlohmann::ordered_json::array();
    for (const cuda::OpMemory& op : cuda::peak_memory_by_op(config.device.index))
      by_op.push_back({{"op", op.op}, {"bytes", op.bytes}, {"blocks", op.blocks}});
    result["peak_allocated_by_op"] = by_op;
  }
  if (options.profile)
    result["profile"] = on_gpu ? to_json(profile_device_time(timed_step, options.profile_steps))
                               : profile_host_time(timed_step, options.profile_steps);
  return result;
}

// --optimizer-step: `optimizer_name`'s step alone over the parameters of `model_name`.
nlohmann::ordered_json run_optimizer_step(const std::string& model_name,
                                          const std::string& optimizer_name, Device device,
                                          const Options& options) {
  manual_seed(0);
  nn::AnyModule model = make_model(model_name);
  model.ptr()->to(device);
  std::vector<Tensor> params = model.ptr()->parameters();
  int64_t parameter_count = 0;
  for (Tensor& p : params) {
    p.set_grad(randn(p.sizes()).to(device) * 1e-2);  // kept: every step reads the same gradients
    parameter_count += p.numel();
  }
  std::unique_ptr<optim::Optimizer> optimizer;
  int64_t floats_per_parameter = 0;  // read or written by one step
  if (optimizer_name == "sgd") {
    optimizer = std::make_unique<optim::SGD>(
        params, optim::SGDOptions(0.01).momentum(0.9).nesterov(true).weight_decay(5e-4));
    floats_per_parameter = 5;  // p, buffer read and written; g read
  } else {
    optimizer = std::make_unique<optim::AdamW>(params, optim::AdamWOptions(1e-3));
    floats_per_parameter = 7;  // p, exp_avg, exp_avg_sq read and written; g read
  }
  const bool on_gpu = device.is_cuda();
  for (int i = 0; i < std::max(options.warmup, 1); ++i) optimizer->step();  // makes the state
  if (on_gpu) cuda::synchronize();
  std::vector<double> milliseconds;
  for (int i = 0; i < options.steps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    optimizer->step();
    if (on_gpu) cuda::synchronize();
    milliseconds.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  const double median_ms = percentile(milliseconds, 0.5);
  const double bytes = static_cast<double>(parameter_count * floats_per_parameter * 4);
  nlohmann::ordered_json result;
  result["framework"] = "minidl";
  result["benchmark"] = "optimizer_step";
  result["model"] = model_name;
  result["optimizer"] = optimizer_name;
  result["device"] = device.str();
  result["threads"] = get_num_threads();
  result["parameters"] = parameter_count;
  result["steps"] = options.steps;
  result["step_ms_median"] = median_ms;
  result["step_ms_p10"] = percentile(milliseconds, 0.1);
  result["step_ms_p90"] = percentile(milliseconds, 0.9);
  result["step_ms_min"] = *std::min_element(milliseconds.begin(), milliseconds.end());
  result["gb_per_s"] = bytes / (median_ms * 1e-3) / 1e9;
  return result;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  for (std::string part; std::getline(stream, part, ',');) parts.push_back(part);
  return parts;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  std::string models = "lenet,resnet20,resnet18";  // gpt only when asked for
  CLI::App app("Times whole training steps of minidl's models; one JSON line per configuration.",
               "bench");
  app.add_option("--model", models, "Comma-separated: lenet, resnet20, resnet18, gpt")
      ->capture_default_str();
  app.add_option("--gpt-shape", options.gpt_shape,
                 "--model gpt's shape: train_gpt's default, nanoGPT's shakespeare-char, GPT-2 "
                 "small, or auto (default on the CPU, gpt2-small on a GPU)")
      ->check(CLI::IsMember({"auto", "default", "gpt2-small", "shakespeare-char"}))
      ->capture_default_str();
  app.add_option("--device", options.device, "cpu, cuda, or auto (a GPU when there is one)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--precision", options.precision, "Arithmetic precision")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}))
      ->capture_default_str();
  app.add_option("--batch-size", options.batch_size,
                 "Images (sequences) per step (0: 256 for LeNet, 512 for the ResNets, 32 for "
                 "the default GPT, 64 for shakespeare-char, 8 for GPT-2 small)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--warmup", options.warmup, "Untimed steps first")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--steps", options.steps, "Timed steps")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--peak-tflops", options.peak_tflops,
                 "The device's peak TFLOP/s, to report the fraction of it achieved (0: omit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_flag("--channels-last", options.channels_last, "NHWC images (cuDNN's fast layout)");
  CLI::Option* cuda_graph_option =
      app.add_option("--cuda-graph", options.cuda_graph,
                     "Capture the step in a CUDA graph and time its replays (GPU only)")
          ->check(CLI::IsMember({"on", "off"}))
          ->capture_default_str();
  app.add_option("--tf32", options.tf32,
                 "on: float32 convolutions and matrix products may use TF32 tensor cores "
                 "(GPU); off: float32 arithmetic")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_option("--cudnn-benchmark", options.cudnn_benchmark,
                 "on: cuDNN times its convolution algorithms during the warm-up and keeps the "
                 "fastest (GPU); off: cuDNN's heuristics choose")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_flag("--profile", options.profile,
               "After the timed steps, record --profile-steps more and report where they spend "
               "their time: minidl's ops and oneDNN's reorders (CPU), or kernel time, "
               "device-busy time and idle gaps from CUPTI (GPU)");
  app.add_option("--profile-steps", options.profile_steps, "Steps recorded by --profile")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  std::string optimizer_steps;
  app.add_option("--optimizer-step", optimizer_steps,
                 "Comma-separated: sgd, adamw. Time the optimizer's step alone for each --model's "
                 "parameters instead of training steps");
  CLI11_PARSE(app, argc, argv);

  try {
    options.models = split_commas(models);
    for (const std::string& model : options.models)
      MINIDL_CHECK(model == "lenet" || model == "resnet20" || model == "resnet18" || model == "gpt",
                   "bench: unknown model \"", model,
                   "\" (expected lenet, resnet20, resnet18 or gpt)");
    set_allow_tf32(options.tf32 == "on");
    set_cudnn_benchmark(options.cudnn_benchmark == "on");
    Device device = options.device == "cpu" ? Device(kCPU) : Device(kCUDA, 0);
    if (options.device == "auto" && !cuda::is_available()) device = Device(kCPU);
    if (device.is_cuda()) cuda::require_available("bench --device cuda");
    // The default "on" means "where it applies"; asking for it on the CPU is a mistake.
    const bool graph_asked_for = cuda_graph_option->count() > 0 && options.cuda_graph == "on";
    MINIDL_CHECK(device.is_cuda() || !graph_asked_for, "bench: --cuda-graph on needs a GPU ",
                 "(--device cuda); the CPU has no CUDA graphs");
    if (!optimizer_steps.empty()) {
      options.optimizer_steps = split_commas(optimizer_steps);
      MINIDL_CHECK(!options.profile, "bench: --profile records training steps; it does not ",
                   "apply to --optimizer-step");
      for (const std::string& optimizer : options.optimizer_steps)
        MINIDL_CHECK(optimizer == "sgd" || optimizer == "adamw", "bench: unknown optimizer \"",
                     optimizer, "\" (expected sgd or adamw)");
      for (const std::string& model : options.models)
        for (const std::string& optimizer : options.optimizer_steps) {
          std::printf("%s\n", run_optimizer_step(model, optimizer, device, options).dump().c_str());
          std::fflush(stdout);
        }
      return 0;
    }
    for (const std::string& model : options.models) {
      Configuration config;
      config.model = model;
      config.gpt_shape = options.gpt_shape != "auto" ? options.gpt_shape
                         : device.is_cuda()          ? "gpt2-small"
                                                     : "default";
      const int64_t gpt_batch = config.gpt_shape == "gpt2-small"         ? 8
                                : config.gpt_shape == "shakespeare-char" ? 64
                                                                         : 32;
      config.batch_size = options.batch_size > 0 ? options.batch_size
                          : model == "lenet"     ? 256
                          : model == "gpt"       ? gpt_batch
                                                 : 512;
      config.device = device;
      config.precision = options.precision;
      config.channels_last = options.channels_last;
      config.cuda_graph = device.is_cuda() && options.cuda_graph == "on";
      std::printf("%s\n", run(config, options).dump().c_str());
      std::fflush(stdout);
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench: error: %s\n", error.what());
    return 1;
  }
  return 0;
}
