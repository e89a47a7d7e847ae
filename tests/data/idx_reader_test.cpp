// The IDX (MNIST-format) reader on generated files: raw and gzip files read back exactly, and
// every kind of corrupt input fails with a message naming the file, the offset and what was
// expected.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "dataset_files.h"
#include "minidl/data/readers/gzip.h"
#include "minidl/data/readers/idx_format.h"
#include "minidl/data/readers/mnist.h"
#include "test_util.h"

namespace minidl::data {
namespace {

using testing::gzip_bytes;
using testing::idx_bytes;
using testing::pattern_bytes;
using testing::TemporaryDirectory;
using testing::write_file;

constexpr uint32_t kRows = 5, kColumns = 4;

// A small MNIST-format split: `count` images of kRows x kColumns and their labels.
struct GeneratedSplit {
  std::vector<uint8_t> pixels;
  std::vector<uint8_t> labels;

  GeneratedSplit(uint32_t count, uint32_t seed)
      : pixels(pattern_bytes(count * kRows * kColumns, seed)), labels(count) {
    const std::vector<uint8_t> raw_labels = pattern_bytes(count, seed + 1);
    for (uint32_t i = 0; i < count; ++i) labels[i] = raw_labels[i] % kMnistNumClasses;
  }
  uint32_t count() const { return static_cast<uint32_t>(labels.size()); }
  std::vector<uint8_t> images_file() const {
    return idx_bytes(kIdxUnsignedByte, {count(), kRows, kColumns}, pixels);
  }
  std::vector<uint8_t> labels_file() const {
    return idx_bytes(kIdxUnsignedByte, {count()}, labels);
  }
};

void write_split(const std::filesystem::path& directory, const std::string& prefix,
                 const std::vector<uint8_t>& images, const std::vector<uint8_t>& labels,
                 bool gzip) {
  const std::string suffix = gzip ? ".gz" : "";
  write_file(directory / (prefix + "-images-idx3-ubyte" + suffix),
             gzip ? gzip_bytes(images) : images);
  write_file(directory / (prefix + "-labels-idx1-ubyte" + suffix),
             gzip ? gzip_bytes(labels) : labels);
}

void expect_dataset_holds(const InMemoryDataset& dataset, const GeneratedSplit& split) {
  ASSERT_EQ(dataset.images().sizes(), (Shape{split.count(), 1, kRows, kColumns}));
  EXPECT_EQ(dataset.images().dtype(), kUInt8);
  EXPECT_EQ(dataset.labels().dtype(), kInt64);
  EXPECT_EQ(dataset.num_classes(), kMnistNumClasses);
  EXPECT_EQ(to_vector<uint8_t>(dataset.images()), split.pixels);
  const std::vector<int64_t> labels = to_vector<int64_t>(dataset.labels());
  ASSERT_EQ(labels.size(), split.labels.size());
  for (size_t i = 0; i < labels.size(); ++i)
    EXPECT_EQ(labels[i], split.labels[i]) << "sample " << i;
}

class IdxReader : public ::testing::TestWithParam<bool> {};  // parameter: gzip the files

TEST_P(IdxReader, ReadsBothSplitsBackExactly) {
  const bool gzip = GetParam();
  TemporaryDirectory directory;
  const GeneratedSplit train(13, 1), test(6, 2);
  write_split(directory.path(), "train", train.images_file(), train.labels_file(), gzip);
  write_split(directory.path(), "t10k", test.images_file(), test.labels_file(), gzip);
  expect_dataset_holds(*read_mnist(directory.path(), Split::Train), train);
  expect_dataset_holds(*read_mnist(directory.path(), Split::Test), test);
}

INSTANTIATE_TEST_SUITE_P(RawAndGzip, IdxReader, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Gzip" : "Raw"; });

TEST(IdxReader, MixesRawAndGzipFilesAndReadsConcatenatedGzipMembers) {
  TemporaryDirectory directory;
  const GeneratedSplit split(9, 3);
  const std::vector<uint8_t> images = split.images_file();
  // Two gzip members back to back decompress to the two halves joined (as `cat a.gz b.gz`).
  const size_t half = images.size() / 2;
  std::vector<uint8_t> two_members =
      gzip_bytes(std::vector<uint8_t>(images.begin(), images.begin() + half));
  const std::vector<uint8_t> second =
      gzip_bytes(std::vector<uint8_t>(images.begin() + half, images.end()));
  two_members.insert(two_members.end(), second.begin(), second.end());
  write_file(directory.path() / "train-images-idx3-ubyte.gz", two_members);
  write_file(directory.path() / "train-labels-idx1-ubyte", split.labels_file());
  expect_dataset_holds(*read_mnist(directory.path(), Split::Train), split);
}

// ---- corrupt inputs, through the reader (file names in messages) ----

// Writes the train split with `images` and `labels` as given, and returns the reader's error.
class CorruptIdx : public ::testing::Test {
 protected:
  void write(const std::vector<uint8_t>& images, const std::vector<uint8_t>& labels,
             bool gzip = false) {
    write_split(directory.path(), "train", images, labels, gzip);
  }
  std::string images_path(bool gzip = false) const {
    return (directory.path() / (std::string("train-images-idx3-ubyte") + (gzip ? ".gz" : "")))
        .string();
  }
  std::string labels_path() const {
    return (directory.path() / "train-labels-idx1-ubyte").string();
  }
  void expect_error(const std::vector<std::string>& parts) {
    try {
      read_mnist(directory.path(), Split::Train);
      ADD_FAILURE() << "expected minidl::Error, nothing was thrown";
    } catch (const Error& error) {
      for (const std::string& part : parts)
        EXPECT_NE(std::string(error.what()).find(part), std::string::npos)
            << "missing \"" << part << "\" in: " << error.what();
    }
  }
  TemporaryDirectory directory;
  GeneratedSplit split{4, 7};
};

TEST_F(CorruptIdx, WrongMagic) {
  std::vector<uint8_t> images = split.images_file();
  images[1] = 0x03;
  write(images, split.labels_file());
  expect_error({images_path(), "bad magic number: bytes 0-1 are 0x00 0x03, expected 0x00 0x00"});
}

TEST_F(CorruptIdx, WrongTypeByte) {
  std::vector<uint8_t> images = split.images_file();
  images[2] = 0x0D;
  write(images, split.labels_file());
  expect_error(
      {images_path(), "byte 2 (element type) is 0x0d (float32), expected 0x08 (unsigned byte)"});
}

TEST_F(CorruptIdx, WrongRank) {
  write(idx_bytes(kIdxUnsignedByte, {4, kRows * kColumns}, split.pixels), split.labels_file());
  expect_error({images_path(), "byte 3 (number of dimensions) is 2, expected 3"});
}

TEST_F(CorruptIdx, TruncatedInsideTheMagicNumber) {
  write(std::vector<uint8_t>{0, 0}, split.labels_file());
  expect_error({images_path(), "ends at byte 2, inside the 4-byte magic number"});
}

TEST_F(CorruptIdx, TruncatedInsideTheDimensions) {
  std::vector<uint8_t> images = split.images_file();
  images.resize(10);  // the header of a rank-3 array is 16 bytes
  write(images, split.labels_file());
  expect_error({images_path(), "ends at byte 10, inside the header", "ends at byte 16"});
}

TEST_F(CorruptIdx, TruncatedInsideTheData) {
  std::vector<uint8_t> images = split.images_file();
  const size_t full = images.size();
  images.resize(full - 3);
  write(images, split.labels_file());
  expect_error({images_path(), "ends at byte " + std::to_string(full - 3),
                "promises " + std::to_string(full - 16) + " data bytes from byte 16 to byte " +
                    std::to_string(full),
                "truncated"});
}

TEST_F(CorruptIdx, TruncatedGzipDataNamesTheDecompressedOffset) {
  std::vector<uint8_t> images = split.images_file();
  images.resize(images.size() - 5);
  write(images, split.labels_file(), /*gzip=*/true);
  expect_error(
      {images_path(true) + " (decompressed)", "ends at byte " + std::to_string(images.size())});
}

TEST_F(CorruptIdx, TruncatedGzipStream) {
  std::vector<uint8_t> compressed = gzip_bytes(split.images_file());
  compressed.resize(compressed.size() / 2);
  write_file(directory.path() / "train-images-idx3-ubyte.gz", compressed);
  write_file(directory.path() / "train-labels-idx1-ubyte", split.labels_file());
  expect_error({images_path(true), "the gzip stream ends at byte " +
                                       std::to_string(compressed.size()) +
                                       " before its end marker (truncated file?)"});
}

TEST_F(CorruptIdx, CorruptGzipStream) {
  std::vector<uint8_t> compressed = gzip_bytes(split.images_file());
  for (size_t i = 10; i < compressed.size(); ++i) compressed[i] = 0xff;  // after the gzip header
  write_file(directory.path() / "train-images-idx3-ubyte.gz", compressed);
  write_file(directory.path() / "train-labels-idx1-ubyte", split.labels_file());
  expect_error({images_path(true), "corrupt gzip data near compressed byte"});
}

TEST_F(CorruptIdx, BytesAfterTheGzipStream) {
  std::vector<uint8_t> compressed = gzip_bytes(split.images_file());
  const size_t end = compressed.size();
  compressed.insert(compressed.end(), {1, 2, 3});
  write_file(directory.path() / "train-images-idx3-ubyte.gz", compressed);
  write_file(directory.path() / "train-labels-idx1-ubyte", split.labels_file());
  expect_error({images_path(true), "3 bytes after the end of the gzip stream at byte " +
                                       std::to_string(end) + " are not another gzip member"});
}

TEST_F(CorruptIdx, ExtraBytes) {
  std::vector<uint8_t> images = split.images_file();
  const size_t end = images.size();
  images.insert(images.end(), {9, 9, 9});
  write(images, split.labels_file());
  expect_error({images_path(),
                "has 3 extra bytes after the data, which ends at byte " + std::to_string(end)});
}

TEST_F(CorruptIdx, LabelOutOfRange) {
  std::vector<uint8_t> labels = split.labels_file();
  labels[8 + 2] = 10;  // sample 2; the data of a rank-1 array starts at byte 8
  write(split.images_file(), labels);
  expect_error({labels_path(),
                "label 10 of sample 2 (at byte 10) is out of range, expected a "
                "class below 10"});
}

TEST_F(CorruptIdx, CountMismatch) {
  write(split.images_file(), idx_bytes(kIdxUnsignedByte, {3}, {1, 2, 3}));
  expect_error({images_path(), labels_path(), "holds 4 images but", "holds 3 labels"});
}

TEST_F(CorruptIdx, DimensionsThatOverflow) {
  write(idx_bytes(kIdxUnsignedByte, {0xffffffffu, 0xffffffffu, 0xffffffffu}, {}),
        split.labels_file());
  expect_error(
      {images_path(), "multiply to more elements than any file can hold", "up to byte 12"});
}

TEST_F(CorruptIdx, MissingFile) {
  write_file(directory.path() / "train-images-idx3-ubyte", split.images_file());
  expect_error({directory.path().string(),
                "has neither train-labels-idx1-ubyte nor train-labels-idx1-ubyte.gz"});
}

TEST(IdxReader, MissingDirectorySaysWhatToLookForAndHowToGetIt) {
  const std::filesystem::path missing = "/nonexistent/minidl/fashion-mnist";
  EXPECT_ERROR_CONTAINS(
      read_mnist(missing, Split::Train),
      "read_mnist: directory /nonexistent/minidl/fashion-mnist does not exist; "
      "it should hold train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz]");
  EXPECT_ERROR_CONTAINS(read_fashion_mnist(Split::Test, missing), "dataset-fashion-mnist");
  EXPECT_ERROR_CONTAINS(read_fashion_mnist(Split::Test, missing), "t10k-images-idx3-ubyte[.gz]");
}

// ---- the parser alone (what the fuzzer drives) ----

TEST(IdxFormat, ParsesDimensionsAndPointsAtTheData) {
  const std::vector<uint8_t> bytes = idx_bytes(kIdxUnsignedByte, {2, 3}, {1, 2, 3, 4, 5, 6});
  const IdxArray array = parse_idx(bytes, 2, "memory");
  EXPECT_EQ(array.dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(array.data_offset, 12u);
  EXPECT_EQ(std::vector<uint8_t>(array.data.begin(), array.data.end()),
            (std::vector<uint8_t>{1, 2, 3, 4, 5, 6}));
}

TEST(IdxFormat, EmptyInputAndEmptyArrays) {
  EXPECT_ERROR_CONTAINS(parse_idx({}, 1, "memory"), "IDX file memory: ends at byte 0");
  const std::vector<uint8_t> empty_array = idx_bytes(kIdxUnsignedByte, {0}, {});
  EXPECT_TRUE(parse_idx(empty_array, 1, "memory").data.empty());
}

TEST(Gzip, RoundTripsAndRefusesToInflatePastTheLimit) {
  const std::vector<uint8_t> original = pattern_bytes(100000, 5);
  const std::vector<uint8_t> compressed = gzip_bytes(original);
  EXPECT_TRUE(is_gzip(compressed));
  EXPECT_FALSE(is_gzip(original));
  EXPECT_EQ(gunzip(compressed, "memory"), original);
  EXPECT_ERROR_CONTAINS(gunzip(compressed, "memory", 99999),
                        "decompresses to more than 99999 bytes (the limit)");
  EXPECT_EQ(gunzip(compressed, "memory", 100000), original);
  EXPECT_EQ(decompress_if_gzip(original, "memory"), original);
}

}  // namespace
}  // namespace minidl::data
