#pragma once
// Text files to the train and validation token files a GPT reads, as nanoGPT's
// data/shakespeare_char/prepare.py makes them: the files are concatenated as they are (in the
// order given, nothing inserted between them), encoded by ByteTokenizer, and split once: the
// first int(n * train_fraction) tokens are the training set, the rest the validation set. Both
// are written in llm.c's format (data/readers/token_file.h) as <out>/train.bin and <out>/val.bin.
// tools/prepare_text_tokens.cpp is this function as a program.
#include <cstdint>
#include <filesystem>
#include <span>

namespace minidl::data {

inline constexpr double kDefaultTrainFraction = 0.9;
inline constexpr const char* kTrainTokenFileName = "train.bin";
inline constexpr const char* kValidationTokenFileName = "val.bin";

// How many of `total_tokens` go to the training set: int(total_tokens * train_fraction), in
// double arithmetic truncated toward zero, exactly as Python computes nanoGPT's split.
// train_fraction must be in [0, 1].
int64_t train_token_count(int64_t total_tokens, double train_fraction);

struct TextTokenFiles {
  std::filesystem::path train;       // <out>/train.bin
  std::filesystem::path validation;  // <out>/val.bin
  int64_t train_tokens = 0;
  int64_t validation_tokens = 0;
};

// Reads `text_files`, writes <out_directory>/train.bin and val.bin (creating the directory when
// missing; each file atomically) and says what it wrote. An empty list, a file that cannot be
// read, text that adds up to no bytes at all, or more than a token file holds is a
// minidl::Error.
TextTokenFiles prepare_text_token_files(std::span<const std::filesystem::path> text_files,
                                        const std::filesystem::path& out_directory,
                                        double train_fraction = kDefaultTrainFraction);

}  // namespace minidl::data
