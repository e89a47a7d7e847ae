#pragma once
// What the trainer programs' command lines share (trainer_program.cpp for train_lenet and
// train_cifar10, train_gpt.cpp): CLI11 validators stricter than CLI11's own conversions, the
// usage error (exit status 2), --device's choice, and the output checks made before any data
// loads.
//
// The validators parse the text themselves because CLI11's own conversions are lax: strtoll and
// strtoull saturate or wrap numbers out of range (a seed of -1 becomes 2^64-1), base 0 reads
// "010" as octal, and strtold takes nan and inf. CLI11 runs a validator on an option's text
// before converting it and reports a refusal as "--option: <message>" (a CLI::ValidationError:
// exit status 2).
#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdint>
#include <string>
#include <utility>

#include "minidl/core/device.h"
#include "minidl/core/error.h"

namespace minidl::tools {

// A mistake in the command line: exit status 2.
struct UsageError : Error {
  using Error::Error;
};

enum class Bound { kInclusive, kExclusive };

// 0, 0.5, 1000000: a number as the options' texts write it.
std::string number_text(double value);
// "expected <expected>, got <text>" ("nothing" for an empty text).
std::string refusal(const std::string& expected, const std::string& text);

// A decimal integer from min to max, digits with an optional leading '-' and nothing else.
// `expected` says what is wanted ("an integer >= 1"), `label` says it in --help ("POSITIVE"). The
// validator rewrites the text to the number's plain form, so CLI11's base-0 conversion reads
// "010" as 10.
template <typename Int>
CLI::Validator integer_validator(Int min, Int max, const std::string& expected,
                                 const std::string& label) {
  const std::string full_range =
      "an integer from " + std::to_string(min) + " to " + std::to_string(max);
  auto validate = [=](std::string& text) -> std::string {
    Int value{};
    const char* end = text.data() + text.size();
    const auto [stop, error] = std::from_chars(text.data(), end, value);
    if (error == std::errc::result_out_of_range && stop == end) return refusal(full_range, text);
    if (error != std::errc() || stop != end || value < min || value > max)
      return refusal(expected, text);
    text = std::to_string(value);
    return {};
  };
  return CLI::Validator(validate, label);
}

// An integer >= min (and within int64_t).
CLI::Validator integer_at_least(int64_t min);

// An integer from min to max.
template <typename Int>
CLI::Validator integer_in_range(Int min, Int max) {
  return integer_validator<Int>(
      min, max, "an integer from " + std::to_string(min) + " to " + std::to_string(max),
      "[" + std::to_string(min) + " - " + std::to_string(max) + "]");
}

// A finite number > min, or >= min with Bound::kInclusive.
CLI::Validator finite_at_least(double min, Bound bound);
// A number from min to max, both included.
CLI::Validator finite_in_range(double min, double max);

// The options every trainer has, with one name, check and meaning each: how and where the run
// executes, its checkpoints and its output. A trainer's CommandLine derives from it and sets its
// own defaults in its constructor.
struct RunOptions {
  double clip_grad_norm = 0;
  int64_t accumulate = 1;
  int64_t zero = 0;  // ZeRO stage: 1 shards the optimizer's state over the ranks
  std::string device = "auto";
  std::string precision = "fp32";
  std::string cuda_graph = "on";
  std::string deterministic = "on";
  std::string tf32 = "off";
  std::string cudnn_benchmark = "off";
  int workers = 1;
  uint64_t seed = 0;
  std::string checkpoint_dir;
  std::string resume;
  bool overwrite = false;
  std::string metrics;
  std::string tensorboard;
  int64_t tensorboard_histograms = 0;
  std::string profile_steps;  // "A:B", checked by the option's validator
  std::string profile_trace = "trace.json";
  int64_t log_every = 100;
  std::string log_level = "info";
  bool no_progress = false;
};

// The words of the run options' help that differ between trainers.
struct RunOptionTexts {
  std::string accumulated;  // what --accumulate counts: "Batches", "Micro-batches"
  std::string seeded;       // what --seed seeds
  std::string resumable;    // the options a resumed run may change, for --resume
  std::string metrics;      // when --metrics gets a line: "per epoch"
  std::string progress;     // where --no-progress leaves out lines: "inside an epoch ..."
};

// --profile-steps "A:B" as (A, B); (0, 0) for an empty text.
std::pair<int64_t, int64_t> step_range(const std::string& text);

// Adds the run options to `app`, bound to `run`'s fields (their values are the defaults shown).
void define_run_options(CLI::App& app, RunOptions& run, const RunOptionTexts& texts);

// Sets the process-wide switches the run options name: set_cudnn_deterministic,
// set_cudnn_benchmark and set_allow_tf32. Throws UsageError for --cudnn-benchmark on with
// --deterministic on: timed choices differ from run to run, which deterministic mode rules out.
void apply_numerics_options(const RunOptions& run);

// --device: "cpu", "cuda" (an error naming why when there is none) or "auto" (a GPU when there
// is one).
Device choose_device(const std::string& choice);

// The outputs are checked before the data loads, so that a mistyped path, or a fresh run in
// another run's checkpoint folder (Note [One run per checkpoint folder] in train/trainer.h),
// fails at once. Empty paths are not written.
void check_outputs(const std::string& checkpoint_dir, const std::string& resume, bool overwrite,
                   const std::string& metrics);

}  // namespace minidl::tools
