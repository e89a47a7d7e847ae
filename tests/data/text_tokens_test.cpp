// The byte tokenizer and text files to train/validation token files: every byte round-trips,
// the split is nanoGPT's (the first int(n * 0.9) tokens train, the rest validate), and the
// files concatenate in the order given.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "dataset_files.h"
#include "minidl/data/readers/token_file.h"
#include "minidl/data/text/byte_tokenizer.h"
#include "minidl/data/text/text_token_files.h"
#include "test_util.h"

namespace minidl::data {
namespace {

using testing::TemporaryDirectory;
using testing::write_file;

std::vector<uint8_t> bytes_of(const std::string& text) { return {text.begin(), text.end()}; }

TEST(ByteTokenizer, EveryByteValueRoundTrips) {
  std::string text;
  for (int value = 0; value < 256; ++value) text.push_back(static_cast<char>(value));
  text += "To be, or not to be: that is the question.\n";
  const ByteTokenizer tokenizer;
  const std::vector<uint16_t> tokens = tokenizer.encode(text);
  ASSERT_EQ(tokens.size(), text.size());
  for (size_t i = 0; i < 256; ++i) EXPECT_EQ(tokens[i], i);
  EXPECT_EQ(tokens[256], 'T');
  EXPECT_EQ(tokenizer.decode(tokens), text);
  EXPECT_EQ(tokenizer.vocab_size(), 256);
}

TEST(ByteTokenizer, Utf8IsOneTokenPerByte) {
  const ByteTokenizer tokenizer;
  const std::string text = "na\xc3\xafve";  // "naive" with a diaeresis: 6 bytes
  EXPECT_EQ(tokenizer.encode(text), (std::vector<uint16_t>{'n', 'a', 0xc3, 0xaf, 'v', 'e'}));
  EXPECT_EQ(tokenizer.decode(tokenizer.encode(text)), text);
  EXPECT_TRUE(tokenizer.encode("").empty());
}

TEST(ByteTokenizer, DecodeRejectsTokensAboveAByte) {
  const std::vector<uint16_t> tokens = {72, 105, 256};
  EXPECT_ERROR_CONTAINS(ByteTokenizer().decode(tokens),
                        "ByteTokenizer::decode: token 2 is 256, expected a byte value below 256");
}

TEST(TextTokenFiles, TrainCountIsPythonsIntOfTheProduct) {
  // int(n * 0.9) in Python's double arithmetic, as nanoGPT's prepare.py computes it.
  EXPECT_EQ(train_token_count(100, 0.9), 90);
  EXPECT_EQ(train_token_count(10, 0.9), 9);
  EXPECT_EQ(train_token_count(11, 0.9), 9);  // 9.9
  EXPECT_EQ(train_token_count(1, 0.9), 0);
  EXPECT_EQ(train_token_count(5057198, 0.9), 4551478);  // Shakespeare's 5,057,198 bytes
  EXPECT_EQ(train_token_count(7, 1.0), 7);
  EXPECT_EQ(train_token_count(7, 0.0), 0);
  EXPECT_ERROR_CONTAINS(train_token_count(7, 1.5), "train_fraction must be in [0, 1], got 1.5");
}

TEST(TextTokenFiles, ConcatenatesInOrderAndSplitsNinetyTen) {
  TemporaryDirectory directory;
  const std::string first = "First Citizen:\nBefore we proceed any further, hear me speak.\n";
  const std::string second = "All:\nSpeak, speak.\n\xe2\x80\x94 and a dash\n";
  const std::filesystem::path a = directory.path() / "b_first.txt";
  const std::filesystem::path b = directory.path() / "a_second.txt";
  write_file(a, bytes_of(first));
  write_file(b, bytes_of(second));
  const std::filesystem::path out = directory.path() / "out" / "tokens";  // made when missing
  const std::vector<std::filesystem::path> files = {a, b};

  const TextTokenFiles written = prepare_text_token_files(files, out);
  const std::string text = first + second;  // the order given, not the names' order
  const auto n = static_cast<int64_t>(text.size());
  const auto train_count = static_cast<int64_t>(static_cast<double>(n) * 0.9);
  EXPECT_EQ(written.train, out / "train.bin");
  EXPECT_EQ(written.validation, out / "val.bin");
  EXPECT_EQ(written.train_tokens, train_count);
  EXPECT_EQ(written.validation_tokens, n - train_count);

  const ByteTokenizer tokenizer;
  const std::vector<uint16_t> train = read_token_file(written.train, tokenizer.vocab_size());
  const std::vector<uint16_t> validation =
      read_token_file(written.validation, tokenizer.vocab_size());
  EXPECT_EQ(tokenizer.decode(train), text.substr(0, static_cast<size_t>(train_count)));
  EXPECT_EQ(tokenizer.decode(validation), text.substr(static_cast<size_t>(train_count)));
}

TEST(TextTokenFiles, OtherFractionAndRewriting) {
  TemporaryDirectory directory;
  const std::filesystem::path text = directory.path() / "t.txt";
  write_file(text, bytes_of("abcdefghij"));
  const std::vector<std::filesystem::path> files = {text};
  const TextTokenFiles half = prepare_text_token_files(files, directory.path(), 0.5);
  EXPECT_EQ(ByteTokenizer().decode(read_token_file(half.train, 256)), "abcde");
  EXPECT_EQ(ByteTokenizer().decode(read_token_file(half.validation, 256)), "fghij");
  const TextTokenFiles again = prepare_text_token_files(files, directory.path());
  EXPECT_EQ(ByteTokenizer().decode(read_token_file(again.train, 256)), "abcdefghi");
  EXPECT_EQ(ByteTokenizer().decode(read_token_file(again.validation, 256)), "j");
}

TEST(TextTokenFiles, Errors) {
  TemporaryDirectory directory;
  const std::vector<std::filesystem::path> none;
  EXPECT_ERROR_CONTAINS(prepare_text_token_files(none, directory.path()),
                        "expected at least one text file, got none");
  const std::vector<std::filesystem::path> missing = {directory.path() / "absent.txt"};
  EXPECT_ERROR_CONTAINS(prepare_text_token_files(missing, directory.path()),
                        (directory.path() / "absent.txt").string() + ": no such file");
  const std::filesystem::path empty = directory.path() / "empty.txt";
  write_file(empty, {});
  const std::vector<std::filesystem::path> empties = {empty, empty};
  EXPECT_ERROR_CONTAINS(prepare_text_token_files(empties, directory.path()),
                        "the 2 text files hold no bytes at all");
  const std::vector<std::filesystem::path> some = {empty};
  EXPECT_ERROR_CONTAINS(prepare_text_token_files(some, directory.path(), -0.1),
                        "train_fraction must be in [0, 1], got -0.1");
  EXPECT_FALSE(std::filesystem::exists(directory.path() / "train.bin"));
}

}  // namespace
}  // namespace minidl::data
