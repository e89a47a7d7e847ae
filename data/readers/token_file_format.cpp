#include "minidl/data/readers/token_file_format.h"

#include <limits>

#include "minidl/core/error.h"

namespace minidl::data {

namespace {

constexpr size_t kMagicIndex = 0, kVersionIndex = 1, kCountIndex = 2;

int32_t little_endian_i32(const uint8_t* p) {
  return static_cast<int32_t>(uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) |
                              (uint32_t{p[3]} << 24));
}

void store_little_endian_i32(uint8_t* p, int32_t value) {
  const auto bits = static_cast<uint32_t>(value);
  for (int b = 0; b < 4; ++b) p[b] = static_cast<uint8_t>(bits >> (8 * b));
}

// Byte offset of header int `index`.
size_t header_offset(size_t index) { return index * sizeof(int32_t); }

}  // namespace

std::vector<uint16_t> parse_token_file(std::span<const uint8_t> bytes, int64_t vocab_size,
                                       std::string_view source) {
  MINIDL_CHECK(vocab_size >= 1 && vocab_size <= kTokenFileMaxVocabularySize,
               "read_token_file: vocab_size must be in [1, ", kTokenFileMaxVocabularySize,
               "] (tokens are uint16), got ", vocab_size);
  MINIDL_CHECK(bytes.size() >= kTokenFileHeaderBytes, "token file ", source, ": ends at byte ",
               bytes.size(), ", inside the ", kTokenFileHeaderBytes,
               "-byte header (256 int32); expected at least ", kTokenFileHeaderBytes,
               " bytes (truncated file?)");
  const int32_t magic = little_endian_i32(bytes.data() + header_offset(kMagicIndex));
  MINIDL_CHECK(magic == kTokenFileMagic, "token file ", source,
               ": bad magic number: bytes 0-3 hold ", magic, ", expected ", kTokenFileMagic,
               " (is this an llm.c token file?)");
  const int32_t version = little_endian_i32(bytes.data() + header_offset(kVersionIndex));
  MINIDL_CHECK(version == kTokenFileVersion, "token file ", source, ": bytes 4-7 (version) hold ",
               version, ", expected ", kTokenFileVersion);
  const int32_t count = little_endian_i32(bytes.data() + header_offset(kCountIndex));
  MINIDL_CHECK(count >= 0, "token file ", source, ": bytes 8-11 (token count) hold ", count,
               ", expected a non-negative count");

  const size_t token_bytes = static_cast<size_t>(count) * kTokenBytes;
  const size_t expected_size = kTokenFileHeaderBytes + token_bytes;
  MINIDL_CHECK(bytes.size() >= expected_size, "token file ", source, ": ends at byte ",
               bytes.size(), ", but its header (bytes 8-11) promises ", count, " tokens, ",
               token_bytes, " bytes from byte ", kTokenFileHeaderBytes, " to byte ", expected_size,
               " (truncated file?)");
  MINIDL_CHECK(bytes.size() == expected_size, "token file ", source, ": has ",
               bytes.size() - expected_size, " extra bytes after the tokens, which end at byte ",
               expected_size, " by its header (", count, " tokens); expected the file to end there",
               " (", bytes.size(), " bytes found)");

  std::vector<uint16_t> tokens(static_cast<size_t>(count));
  const uint8_t* data = bytes.data() + kTokenFileHeaderBytes;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const auto token =
        static_cast<uint16_t>(data[kTokenBytes * i] | (data[kTokenBytes * i + 1] << 8));
    MINIDL_CHECK(token < vocab_size, "token file ", source, ": token ", i, " (at byte ",
                 kTokenFileHeaderBytes + kTokenBytes * i, ") is ", token,
                 ", expected a token below the vocabulary size ", vocab_size);
    tokens[i] = token;
  }
  return tokens;
}

std::vector<uint8_t> token_file_bytes(std::span<const uint16_t> tokens) {
  MINIDL_CHECK(tokens.size() <= static_cast<size_t>(std::numeric_limits<int32_t>::max()),
               "write_token_file: ", tokens.size(),
               " tokens do not fit the header's int32 count; expected at most ",
               std::numeric_limits<int32_t>::max());
  std::vector<uint8_t> bytes(kTokenFileHeaderBytes + kTokenBytes * tokens.size(), 0);
  store_little_endian_i32(bytes.data() + header_offset(kMagicIndex), kTokenFileMagic);
  store_little_endian_i32(bytes.data() + header_offset(kVersionIndex), kTokenFileVersion);
  store_little_endian_i32(bytes.data() + header_offset(kCountIndex),
                          static_cast<int32_t>(tokens.size()));
  uint8_t* data = bytes.data() + kTokenFileHeaderBytes;
  for (size_t i = 0; i < tokens.size(); ++i) {
    data[kTokenBytes * i] = static_cast<uint8_t>(tokens[i]);
    data[kTokenBytes * i + 1] = static_cast<uint8_t>(tokens[i] >> 8);
  }
  return bytes;
}

}  // namespace minidl::data
