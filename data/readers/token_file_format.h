#pragma once
// The token file format of llm.c (karpathy/llm.c, dev/data/data_common.py), parsed from memory
// with every field validated, so that no input can make the reader read out of bounds or
// allocate what the file does not hold:
//
//   offset 0      256 little-endian int32: [0] magic 20240520, [1] version 1, [2] token count,
//                 the rest zero (unused)
//   offset 1024   `count` little-endian uint16 tokens, and nothing after them
//
// So a file holds at most 65,536 distinct tokens (GPT-2's 50,257 fit; so does a byte-level
// vocabulary of 256).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace minidl::data {

inline constexpr int32_t kTokenFileMagic = 20240520;
inline constexpr int32_t kTokenFileVersion = 1;
inline constexpr size_t kTokenFileHeaderInts = 256;
inline constexpr size_t kTokenFileHeaderBytes = kTokenFileHeaderInts * sizeof(int32_t);  // 1024
inline constexpr size_t kTokenBytes = sizeof(uint16_t);
// Token ids are uint16 on disk, so no vocabulary can be larger.
inline constexpr int64_t kTokenFileMaxVocabularySize = int64_t{1} << 16;

// Parses `bytes` as one token file and returns its tokens, checking the header and that the
// file ends exactly after the tokens, and that every token is below `vocab_size` (in
// [1, 65536]). `source` names the data (the file) in errors, which give the byte offset, what
// was expected and what was found.
std::vector<uint16_t> parse_token_file(std::span<const uint8_t> bytes, int64_t vocab_size,
                                       std::string_view source);

// The whole file for `tokens`: the header, then the tokens, little-endian.
std::vector<uint8_t> token_file_bytes(std::span<const uint16_t> tokens);

}  // namespace minidl::data
