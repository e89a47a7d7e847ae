#include "minidl/tools/trainers/command_line.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <vector>

#include "minidl/minidl.h"

namespace minidl::tools {

namespace fs = std::filesystem;

std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.15g", value);  // 0, 0.5, 1000000
  return text;
}

std::string refusal(const std::string& expected, const std::string& text) {
  return "expected " + expected + ", got " + (text.empty() ? std::string("nothing") : text);
}

CLI::Validator integer_at_least(int64_t min) {
  const std::string bound = ">= " + std::to_string(min);
  const std::string label = min == 0 ? "NONNEGATIVE" : min == 1 ? "POSITIVE" : bound;
  return integer_validator<int64_t>(min, std::numeric_limits<int64_t>::max(), "an integer " + bound,
                                    label);
}

namespace {

// A finite number above min (or equal to it, with Bound::kInclusive) and at most max.
CLI::Validator finite_validator(double min, Bound bound, double max, const std::string& expected,
                                const std::string& label) {
  auto validate = [=](std::string& text) -> std::string {
    double value = 0;
    const char* end = text.data() + text.size();
    const auto [stop, error] = std::from_chars(text.data(), end, value);
    const bool above_min = bound == Bound::kInclusive ? value >= min : value > min;
    if (error != std::errc() || stop != end || !std::isfinite(value) || !above_min || value > max)
      return refusal(expected, text);
    return {};
  };
  return CLI::Validator(validate, label);
}

}  // namespace

CLI::Validator finite_at_least(double min, Bound bound) {
  const bool inclusive = bound == Bound::kInclusive;
  const std::string relation = (inclusive ? ">= " : "> ") + number_text(min);
  const std::string label = min != 0 ? relation : inclusive ? "NONNEGATIVE" : "POSITIVE";
  return finite_validator(min, bound, std::numeric_limits<double>::max(),
                          "a finite number " + relation, label);
}

CLI::Validator finite_in_range(double min, double max) {
  return finite_validator(min, Bound::kInclusive, max,
                          "a number from " + number_text(min) + " to " + number_text(max),
                          "[" + number_text(min) + " - " + number_text(max) + "]");
}

void apply_numerics_options(const RunOptions& run) {
  if (run.cudnn_benchmark == "on" && run.deterministic == "on")
    throw UsageError(
        "--cudnn-benchmark on needs --deterministic off: the algorithms it times may differ "
        "from run to run, so a run would not repeat bit for bit");
  set_cudnn_deterministic(run.deterministic == "on");
  set_cudnn_benchmark(run.cudnn_benchmark == "on");
  set_allow_tf32(run.tf32 == "on");
}

Device choose_device(const std::string& choice) {
  if (choice == "cpu") return Device(kCPU);
  if (choice == "cuda") {
    MINIDL_CHECK(
        cuda::is_available(), "--device cuda: ",
        cuda::is_built() ? "no CUDA device is visible" : "this build of minidl has no CUDA backend",
        "; use --device cpu (or auto)");
    return Device(kCUDA, cuda::current_device());  // distributed::init chose it by local rank
  }
  return cuda::is_available() ? Device(kCUDA, cuda::current_device()) : Device(kCPU);
}

void check_outputs(const std::string& checkpoint_dir, const std::string& resume, bool overwrite,
                   const std::string& metrics) {
  if (!checkpoint_dir.empty()) {
    train::check_writable_directory(checkpoint_dir, "--checkpoint-dir");
    const std::vector<fs::path> earlier = train::list_checkpoints(checkpoint_dir);
    if (resume.empty() && !overwrite && !earlier.empty())
      throw Error("--checkpoint-dir " + checkpoint_dir + " holds the checkpoints of an " +
                  "earlier run (" + std::to_string(earlier.size()) + ", the newest " +
                  earlier.back().filename().string() +
                  "); continue it with --resume auto, start afresh with --overwrite, which "
                  "removes them, or give another --checkpoint-dir");
  }
  if (!metrics.empty()) train::check_metrics_file(metrics, "--metrics");
}

std::pair<int64_t, int64_t> step_range(const std::string& text) {
  const size_t colon = text.find(':');
  if (text.empty() || colon == std::string::npos) return {0, 0};
  return {std::stoll(text.substr(0, colon)), std::stoll(text.substr(colon + 1))};
}

namespace {

// "A:B", two decimal integers with 0 <= A < B.
CLI::Validator step_range_validator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::string expected = "A:B with integers 0 <= A < B (steps A+1 to B)";
        const size_t colon = text.find(':');
        if (colon == std::string::npos) return refusal(expected, text);
        int64_t first = 0, last = 0;
        const std::string a = text.substr(0, colon), b = text.substr(colon + 1);
        const auto parsed = [](const std::string& part, int64_t& value) {
          const char* end = part.data() + part.size();
          const auto [stop, error] = std::from_chars(part.data(), end, value);
          return !part.empty() && error == std::errc() && stop == end;
        };
        if (!parsed(a, first) || !parsed(b, last) || first < 0 || last <= first)
          return refusal(expected, text);
        return {};
      },
      "A:B");
}

}  // namespace

void define_run_options(CLI::App& app, RunOptions& run, const RunOptionTexts& texts) {
  app.add_option("--clip-grad-norm", run.clip_grad_norm,
                 "Clip the gradients' total 2-norm to this before each step (0: no clipping)")
      ->check(finite_at_least(0, Bound::kInclusive))
      ->capture_default_str();
  app.add_option(
         "--accumulate", run.accumulate,
         texts.accumulated + " per optimizer step (gradient accumulation; each loss divided by it)")
      ->transform(integer_in_range<int64_t>(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--zero", run.zero,
                 "ZeRO stage: 1 shards the optimizer's state over the ranks (llm.c's -z 1): "
                 "gradients reduce-scattered instead of all-reduced, each rank updating its "
                 "1/N slice of the parameters, then all-gathered (about 1/N of the state per "
                 "rank; the same weights as 0 on 2 ranks, within rounding on more); 0: every "
                 "rank keeps all of it. May change on resume; no CUDA graph with 1")
      ->transform(integer_in_range<int64_t>(0, 1))
      ->capture_default_str();
  app.add_option("--device", run.device, "Where to train: auto takes a GPU when there is one")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--precision", run.precision,
                 "fp32, or mixed precision: bf16, or fp16 with dynamic loss scaling")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}))
      ->capture_default_str();
  app.add_option("--cuda-graph", run.cuda_graph,
                 "Replay the training step from a CUDA graph (GPU, one process, no dropout, "
                 "--accumulate 1; ignored elsewhere)")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_option("--deterministic", run.deterministic,
                 "on: cuDNN's deterministic convolution algorithms only "
                 "(torch.backends.cudnn.deterministic), so that a run on a GPU repeats bit for "
                 "bit and a resumed run ends as a straight one; off: cuDNN may pick faster "
                 "algorithms that accumulate in a varying order (the CPU repeats either way)")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_option("--tf32", run.tf32,
                 "on: float32 convolutions and matrix products may use TF32 tensor cores on a "
                 "GPU (PyTorch's torch.backends.cudnn.allow_tf32 and "
                 "torch.backends.cuda.matmul.allow_tf32); off: float32 arithmetic")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_option("--cudnn-benchmark", run.cudnn_benchmark,
                 "on: cuDNN times its convolution algorithms on a GPU the first time each shape "
                 "runs and keeps the fastest (torch.backends.cudnn.benchmark; needs "
                 "--deterministic off); off: cuDNN's heuristics choose")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_option("--workers", run.workers, "Data-loader worker threads (0: the main thread)")
      ->transform(integer_in_range<int>(0, 64))
      ->capture_default_str();
  app.add_option("--seed", run.seed, "Seed of " + texts.seeded)
      ->transform(integer_in_range<uint64_t>(0, std::numeric_limits<uint64_t>::max()))
      ->capture_default_str();
  app.add_option("--checkpoint-dir", run.checkpoint_dir,
                 "Where checkpoints are written (the 3 newest are kept); empty: none")
      ->capture_default_str();
  app.add_option("--resume", run.resume,
                 "Continue from this checkpoint file, or from the newest in --checkpoint-dir with "
                 "'auto'. The options that define the run must be the checkpoint's; these may "
                 "change: " +
                     texts.resumable + ", and the number of ranks");
  app.add_flag("--overwrite", run.overwrite,
               "Start afresh in a --checkpoint-dir that holds an earlier run's checkpoints, "
               "removing them (without it such a run is refused; --resume auto continues it)");
  app.add_option("--metrics", run.metrics,
                 "Append one JSON object " + texts.metrics + " to this file");
  app.add_option("--tensorboard", run.tensorboard,
                 "Write TensorBoard event files into this folder (tensorboard --logdir DIR): the "
                 "metrics of each evaluation, and every --log-every steps the running loss, lr "
                 "and gradient norm");
  app.add_option("--tensorboard-histograms", run.tensorboard_histograms,
                 "With --tensorboard: histograms of the parameters and their gradients after "
                 "every N evaluations (0: none)")
      ->transform(integer_at_least(0))
      ->capture_default_str();
  app.add_option("--profile-steps", run.profile_steps,
                 "Profile the optimizer steps A+1 to B: minidl's ops, the table by op in the log "
                 "and a Chrome trace in --profile-trace (open it in ui.perfetto.dev)")
      ->check(step_range_validator());
  app.add_option("--profile-trace", run.profile_trace,
                 "Where --profile-steps writes its Chrome trace")
      ->capture_default_str();
  app.add_option("--log-every", run.log_every,
                 "Steps between progress lines when stdout is not a terminal")
      ->transform(integer_at_least(1))
      ->capture_default_str();
  app.add_option("--log-level", run.log_level, "Logging level")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
  app.add_flag("--no-progress", run.no_progress, "No progress lines " + texts.progress);
}

}  // namespace minidl::tools
