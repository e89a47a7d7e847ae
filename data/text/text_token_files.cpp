#include "minidl/data/text/text_token_files.h"

#include <span>
#include <string_view>
#include <system_error>
#include <vector>

#include "minidl/core/error.h"
#include "minidl/data/readers/file_bytes.h"
#include "minidl/data/readers/token_file.h"
#include "minidl/data/text/byte_tokenizer.h"

namespace minidl::data {

int64_t train_token_count(int64_t total_tokens, double train_fraction) {
  MINIDL_CHECK(train_fraction >= 0.0 && train_fraction <= 1.0,
               "train_token_count: train_fraction must be in [0, 1], got ", train_fraction);
  MINIDL_CHECK(total_tokens >= 0, "train_token_count: total_tokens must be non-negative, got ",
               total_tokens);
  return static_cast<int64_t>(static_cast<double>(total_tokens) * train_fraction);
}

TextTokenFiles prepare_text_token_files(std::span<const std::filesystem::path> text_files,
                                        const std::filesystem::path& out_directory,
                                        double train_fraction) {
  MINIDL_CHECK(!text_files.empty(),
               "prepare_text_token_files: expected at least one text file, got none");
  MINIDL_CHECK(train_fraction >= 0.0 && train_fraction <= 1.0,
               "prepare_text_token_files: train_fraction must be in [0, 1], got ", train_fraction);
  const ByteTokenizer tokenizer;
  std::vector<uint16_t> tokens;
  for (const std::filesystem::path& path : text_files) {
    const std::vector<uint8_t> bytes = read_file_bytes(path);
    const std::vector<uint16_t> file_tokens = tokenizer.encode(
        std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    tokens.insert(tokens.end(), file_tokens.begin(), file_tokens.end());
  }
  MINIDL_CHECK(!tokens.empty(), "prepare_text_token_files: the ", text_files.size(),
               " text files hold no bytes at all; expected some text");

  std::error_code error;
  std::filesystem::create_directories(out_directory, error);
  MINIDL_CHECK(!error, "prepare_text_token_files: cannot create the output directory ",
               out_directory.string(), ": ", error.message());

  const auto total = static_cast<int64_t>(tokens.size());
  const int64_t train_count = train_token_count(total, train_fraction);
  const std::span<const uint16_t> all(tokens);
  TextTokenFiles files{out_directory / kTrainTokenFileName,
                       out_directory / kValidationTokenFileName, train_count, total - train_count};
  write_token_file(files.train, all.first(static_cast<size_t>(train_count)));
  write_token_file(files.validation, all.subspan(static_cast<size_t>(train_count)));
  return files;
}

}  // namespace minidl::data
