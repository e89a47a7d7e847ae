// The CIFAR-10 binary reader on generated files: they read back exactly, and corrupt files fail
// with a message naming the file, the byte offset and what was expected.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "dataset_files.h"
#include "minidl/data/readers/cifar10.h"
#include "test_util.h"

namespace minidl::data {
namespace {

using testing::cifar10_bytes;
using testing::pattern_bytes;
using testing::TemporaryDirectory;
using testing::write_file;

struct GeneratedRecords {
  std::vector<uint8_t> labels;
  std::vector<uint8_t> images;
  GeneratedRecords(size_t count, uint32_t seed)
      : labels(pattern_bytes(count, seed)), images(pattern_bytes(count * 3072, seed + 100)) {
    for (uint8_t& label : labels) label %= 10;
  }
  std::vector<uint8_t> file() const { return cifar10_bytes(labels, images); }
};

// Writes data_batch_1..5 (with `train_counts` records) and test_batch into `directory`.
std::vector<GeneratedRecords> write_cifar10(const std::filesystem::path& directory,
                                            const std::vector<size_t>& train_counts,
                                            size_t test_count) {
  std::vector<GeneratedRecords> files;
  for (size_t i = 0; i < train_counts.size(); ++i) {
    files.emplace_back(train_counts[i], static_cast<uint32_t>(i + 1));
    write_file(directory / ("data_batch_" + std::to_string(i + 1) + ".bin"), files.back().file());
  }
  files.emplace_back(test_count, 77);
  write_file(directory / "test_batch.bin", files.back().file());
  return files;
}

TEST(Cifar10Reader, ReadsTheFiveTrainingFilesInOrderAndTheTestFile) {
  TemporaryDirectory directory;
  const std::vector<GeneratedRecords> files = write_cifar10(directory.path(), {3, 1, 4, 1, 5}, 2);
  std::vector<uint8_t> train_images, train_labels;
  for (size_t i = 0; i < 5; ++i) {
    train_images.insert(train_images.end(), files[i].images.begin(), files[i].images.end());
    train_labels.insert(train_labels.end(), files[i].labels.begin(), files[i].labels.end());
  }
  const auto train = read_cifar10(Split::Train, directory.path());
  ASSERT_EQ(train->images().sizes(), (Shape{14, 3, 32, 32}));
  EXPECT_EQ(train->num_classes(), 10);
  EXPECT_EQ(to_vector<uint8_t>(train->images()), train_images);
  const std::vector<int64_t> labels = to_vector<int64_t>(train->labels());
  EXPECT_EQ(std::vector<uint8_t>(labels.begin(), labels.end()), train_labels);

  const auto test = read_cifar10(Split::Test, directory.path());
  ASSERT_EQ(test->size(), 2);
  EXPECT_EQ(to_vector<uint8_t>(test->images()), files[5].images);
  // The channel planes keep the file's layout: red, then green, then blue.
  EXPECT_EQ(test->get(1).image.select(0, 2).select(0, 0).select(0, 0).item<uint8_t>(),
            files[5].images[3072 + 2048]);
}

TEST(Cifar10Reader, FileThatIsNotAWholeNumberOfRecords) {
  TemporaryDirectory directory;
  std::vector<uint8_t> bytes = GeneratedRecords(2, 1).file();
  bytes.resize(bytes.size() - 100);
  const auto path = directory.path() / "cut.bin";
  write_file(path, bytes);
  EXPECT_ERROR_CONTAINS(
      read_cifar10_files({path}),
      "CIFAR-10 file " + path.string() +
          ": has 6046 bytes, not a whole number "
          "of 3073-byte records: the last record starts at byte 3073 and is cut off "
          "after 2973 bytes (truncated file?)");
  // Extra bytes after whole records are caught the same way.
  std::vector<uint8_t> longer = GeneratedRecords(1, 1).file();
  longer.push_back(0);
  write_file(path, longer);
  EXPECT_ERROR_CONTAINS(read_cifar10_files({path}), "has 3074 bytes, not a whole number");
}

TEST(Cifar10Reader, LabelOutOfRange) {
  TemporaryDirectory directory;
  GeneratedRecords records(3, 2);
  records.labels[1] = 10;
  const auto path = directory.path() / "bad_label.bin";
  write_file(path, records.file());
  EXPECT_ERROR_CONTAINS(read_cifar10_files({path}),
                        path.string() +
                            ": label 10 of record 1 (at byte 3073) is out of range, "
                            "expected a class below 10");
}

TEST(Cifar10Reader, EmptyFile) {
  TemporaryDirectory directory;
  const auto path = directory.path() / "empty.bin";
  write_file(path, {});
  EXPECT_ERROR_CONTAINS(read_cifar10_files({path}), path.string() + ": is empty");
}

TEST(Cifar10Reader, MissingFileAndMissingDirectory) {
  TemporaryDirectory directory;
  write_cifar10(directory.path(), {1, 1, 1, 1, 1}, 1);
  std::filesystem::remove(directory.path() / "data_batch_4.bin");
  EXPECT_ERROR_CONTAINS(read_cifar10(Split::Train, directory.path()),
                        "has no data_batch_4.bin; the train split needs data_batch_1.bin, "
                        "data_batch_2.bin");
  EXPECT_EQ(read_cifar10(Split::Test, directory.path())->size(), 1);
  EXPECT_ERROR_CONTAINS(read_cifar10(Split::Test, directory.path() / "nothing"),
                        "does not exist; it should hold data_batch_1.bin");
  EXPECT_ERROR_CONTAINS(read_cifar10(Split::Test, directory.path() / "nothing"),
                        "cifar-10-binary.tar.gz");
  EXPECT_ERROR_CONTAINS(read_cifar10_files({directory.path() / "absent.bin"}),
                        "absent.bin: no such file");
}

}  // namespace
}  // namespace minidl::data
