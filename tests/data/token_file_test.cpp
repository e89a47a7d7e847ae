// The llm.c token file reader and writer on files the tests make: a written file reads back
// exactly, has llm.c's header byte for byte, and every kind of hostile file fails with a message
// naming the file, the byte offset, what was expected and what was found.
#include "minidl/data/readers/token_file.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "dataset_files.h"
#include "minidl/data/readers/file_bytes.h"
#include "minidl/data/readers/token_file_format.h"
#include "test_util.h"

namespace minidl::data {
namespace {

using testing::TemporaryDirectory;
using testing::write_file;

constexpr int64_t kVocabularySize = 1000;

std::vector<uint16_t> sample_tokens() { return {0, 1, 255, 256, 999, 42, 513}; }

void store_i32(std::vector<uint8_t>& bytes, size_t offset, int32_t value) {
  for (size_t b = 0; b < 4; ++b)
    bytes[offset + b] = static_cast<uint8_t>(static_cast<uint32_t>(value) >> (8 * b));
}

TEST(TokenFile, WriteThenReadGivesTheTokensBack) {
  TemporaryDirectory directory;
  const std::filesystem::path path = directory.path() / "tokens.bin";
  write_token_file(path, sample_tokens());
  EXPECT_EQ(read_token_file(path, kVocabularySize), sample_tokens());
  // Exactly the header and the tokens, and no temporary file left beside it.
  EXPECT_EQ(std::filesystem::file_size(path), 1024u + 2u * sample_tokens().size());
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(directory.path()),
                          std::filesystem::directory_iterator()),
            1);
}

TEST(TokenFile, EmptyFileOfTokensRoundTrips) {
  TemporaryDirectory directory;
  const std::filesystem::path path = directory.path() / "empty.bin";
  write_token_file(path, {});
  EXPECT_TRUE(read_token_file(path, 256).empty());
}

TEST(TokenFile, HeaderIsLlmcsLittleEndianLayout) {
  const std::vector<uint8_t> bytes = token_file_bytes(sample_tokens());
  ASSERT_EQ(bytes.size(), 1024u + 14u);
  // 20240520 = 0x0134D888, version 1, count 7, then zeros up to byte 1024.
  EXPECT_EQ((std::vector<uint8_t>(bytes.begin(), bytes.begin() + 12)),
            (std::vector<uint8_t>{0x88, 0xD8, 0x34, 0x01, 1, 0, 0, 0, 7, 0, 0, 0}));
  for (size_t i = 12; i < 1024; ++i) ASSERT_EQ(bytes[i], 0) << "header byte " << i;
  // Token 3 is 256 = 0x0100 and token 6 is 513 = 0x0201, low byte first.
  EXPECT_EQ(bytes[1024 + 6], 0x00);
  EXPECT_EQ(bytes[1024 + 7], 0x01);
  EXPECT_EQ(bytes[1024 + 12], 0x01);
  EXPECT_EQ(bytes[1024 + 13], 0x02);
}

TEST(TokenFile, WriteReplacesAnExistingFile) {
  TemporaryDirectory directory;
  const std::filesystem::path path = directory.path() / "tokens.bin";
  write_token_file(path, sample_tokens());
  const std::vector<uint16_t> replacement = {7, 8, 9};
  write_token_file(path, replacement);
  EXPECT_EQ(read_token_file(path, kVocabularySize), replacement);
}

// Writes `bytes` as the file and checks that reading it fails naming the file and each of
// `parts`.
class HostileTokenFile : public ::testing::Test {
 protected:
  void expect_error(const std::vector<uint8_t>& bytes, const std::vector<std::string>& parts,
                    int64_t vocab_size = kVocabularySize) {
    write_file(path(), bytes);
    try {
      read_token_file(path(), vocab_size);
      ADD_FAILURE() << "expected minidl::Error, nothing was thrown";
    } catch (const Error& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find(path().string()), std::string::npos)
          << "the file is not named in: " << message;
      for (const std::string& part : parts)
        EXPECT_NE(message.find(part), std::string::npos)
            << "missing \"" << part << "\" in: " << message;
    }
  }
  std::filesystem::path path() const { return directory.path() / "hostile.bin"; }
  std::vector<uint8_t> good() const { return token_file_bytes(sample_tokens()); }

  TemporaryDirectory directory;
};

TEST_F(HostileTokenFile, WrongMagic) {
  std::vector<uint8_t> bytes = good();
  store_i32(bytes, 0, 20240521);
  expect_error(bytes, {"bad magic number: bytes 0-3 hold 20240521, expected 20240520"});
}

TEST_F(HostileTokenFile, WrongVersion) {
  std::vector<uint8_t> bytes = good();
  store_i32(bytes, 4, 2);
  expect_error(bytes, {"bytes 4-7 (version) hold 2, expected 1"});
}

TEST_F(HostileTokenFile, NegativeCount) {
  std::vector<uint8_t> bytes = good();
  store_i32(bytes, 8, -3);
  expect_error(bytes, {"bytes 8-11 (token count) hold -3, expected a non-negative count"});
}

TEST_F(HostileTokenFile, ShorterThanTheHeader) {
  std::vector<uint8_t> bytes = good();
  bytes.resize(1000);
  expect_error(bytes,
               {"ends at byte 1000, inside the 1024-byte header", "expected at least 1024 bytes"});
}

TEST_F(HostileTokenFile, EmptyFile) {
  expect_error({}, {"ends at byte 0, inside the 1024-byte header"});
}

TEST_F(HostileTokenFile, TruncatedTokens) {
  std::vector<uint8_t> bytes = good();
  bytes.resize(bytes.size() - 3);  // 1035 bytes: five and a half tokens of seven
  expect_error(bytes, {"ends at byte 1035",
                       "promises 7 tokens, 14 bytes from byte 1024 to byte "
                       "1038"});
}

TEST_F(HostileTokenFile, TrailingBytes) {
  std::vector<uint8_t> bytes = good();
  bytes.insert(bytes.end(), {1, 2, 3});
  expect_error(bytes, {"has 3 extra bytes after the tokens, which end at byte 1038", "(7 tokens)",
                       "(1041 bytes found)"});
}

TEST_F(HostileTokenFile, CountDisagreesWithTheSize) {
  std::vector<uint8_t> bytes = good();
  store_i32(bytes, 8, 5);  // the file holds 7 tokens
  expect_error(bytes, {"has 4 extra bytes after the tokens, which end at byte 1034"});
}

TEST_F(HostileTokenFile, TokenAtTheVocabularySize) {
  std::vector<uint16_t> tokens = sample_tokens();
  tokens[5] = 1000;
  expect_error(token_file_bytes(tokens),
               {"token 5 (at byte 1034) is 1000, expected a token below the vocabulary size 1000"});
}

TEST_F(HostileTokenFile, TokenAboveAByteVocabulary) {
  expect_error(good(),
               {"token 3 (at byte 1030) is 256, expected a token below the vocabulary "
                "size 256"},
               /*vocab_size=*/256);
}

TEST(TokenFile, MissingFileIsNamed) {
  TemporaryDirectory directory;
  const std::filesystem::path path = directory.path() / "absent.bin";
  EXPECT_ERROR_CONTAINS(read_token_file(path, 256), path.string() + ": no such file");
}

TEST(TokenFile, VocabularySizeMustFitUint16) {
  const std::vector<uint8_t> bytes = token_file_bytes(sample_tokens());
  EXPECT_ERROR_CONTAINS(parse_token_file(bytes, 0, "x"), "vocab_size must be in [1, 65536]");
  EXPECT_ERROR_CONTAINS(parse_token_file(bytes, 65537, "x"), "got 65537");
  EXPECT_EQ(parse_token_file(bytes, 65536, "x"), sample_tokens());
}

}  // namespace
}  // namespace minidl::data
