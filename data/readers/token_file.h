#pragma once
// Token files in llm.c's format (data/readers/token_file_format.h: a 1024-byte header of 256
// int32 with magic 20240520, version 1 and the token count, then the uint16 tokens), the files
// a GPT trains on:
//
//   std::vector<uint16_t> train = data::read_token_file(dir / "train.bin", /*vocab_size=*/256);
//   data::write_token_file(dir / "val.bin", tokens);
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace minidl::data {

// The tokens of `path`, read into memory and validated: a wrong magic number or version, a file
// shorter than its header, fewer tokens than the header counts, bytes after them, or a token
// >= `vocab_size` throws minidl::Error naming the file, the byte offset, what was expected and
// what was found.
std::vector<uint16_t> read_token_file(const std::filesystem::path& path, int64_t vocab_size);

// Writes `tokens` to `path` atomically (core/atomic_file.h): a reader sees the old file or the
// whole new one, never a part. The directory must exist.
void write_token_file(const std::filesystem::path& path, std::span<const uint16_t> tokens);

}  // namespace minidl::data
