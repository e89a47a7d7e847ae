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

// --device: "cpu", "cuda" (an error naming why when there is none) or "auto" (a GPU when there
// is one).
Device choose_device(const std::string& choice);

// The outputs are checked before the data loads, so that a mistyped path, or a fresh run in
// another run's checkpoint folder (Note [One run per checkpoint folder] in train/trainer.h),
// fails at once. Empty paths are not written.
void check_outputs(const std::string& checkpoint_dir, const std::string& resume, bool overwrite,
                   const std::string& metrics);

}  // namespace minidl::tools
