// TensorBoard event files (train/tensorboard_writer.h, train/tfrecord_writer.h): CRC-32C against
// its published check value, and a file read back record by record, each record's length and
// CRCs checked and its Event decoded from the protocol buffer wire format here (independently
// of the writer's encoder): the version event, scalars and a histogram with their fields. The
// e2e test e2e.trainers.tensorboard reads a trainer's file with TensorBoard's own reader.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "event_file_reader.h"
#include "minidl/minidl.h"
#include "test_util.h"

namespace minidl {
namespace {

namespace fs = std::filesystem;
using testing::as_double;
using testing::as_float;
using testing::decode;
using testing::packed_doubles;
using testing::read_records;
using testing::summary_value;
using train::TensorBoardWriter;

fs::path scratch_directory() {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path directory = fs::temp_directory_path() / "minidl-tensorboard-test" / test->name();
  fs::remove_all(directory);
  return directory;
}

TEST(TensorBoardWriter, Crc32cHasItsCheckValue) {
  EXPECT_EQ(train::crc32c("123456789"), 0xe3069283u);
  EXPECT_EQ(train::crc32c(""), 0u);
  const uint32_t crc = train::crc32c("123456789");
  EXPECT_EQ(train::masked_crc32c("123456789"), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

TEST(TensorBoardWriter, WritesTheVersionScalarsAndHistogramsAsTensorFlowEvents) {
  const fs::path directory = scratch_directory() / "nested" / "tb";
  fs::path file;
  {
    TensorBoardWriter writer(directory);
    file = writer.file();
    writer.add_scalar("loss/train", 0.3125, 7);
    writer.add_scalar("lr", 1e-3, 1'000'000'000'000);
    // 0..9 and two non-finite values, which the histogram leaves out.
    const std::vector<double> values = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, NAN, INFINITY};
    writer.add_histogram("weights/w", from_host(values.data(), {3, 4}, kFloat64).to(kFloat32), 9,
                         /*buckets=*/5);
  }
  EXPECT_EQ(file.parent_path(), directory);
  EXPECT_EQ(file.filename().string().rfind("events.out.tfevents.", 0), 0u) << file;
  const std::vector<std::string> records = read_records(file);
  ASSERT_EQ(records.size(), 4u);

  const auto version = decode(records[0]);
  EXPECT_EQ(version.find(3)->second.bytes, "brain.Event:2");
  EXPECT_GT(as_double(version.find(1)->second), 1.7e9);  // wall time, seconds since 1970

  std::string tag;
  const auto first = decode(records[1]);
  EXPECT_EQ(first.find(2)->second.number, 7u);
  const auto loss = summary_value(first, tag);
  EXPECT_EQ(tag, "loss/train");
  ASSERT_EQ(loss.find(2)->second.wire_type, 5u);
  EXPECT_EQ(as_float(loss.find(2)->second), 0.3125f);

  const auto second = decode(records[2]);
  EXPECT_EQ(second.find(2)->second.number, 1'000'000'000'000u);
  EXPECT_EQ(as_float(summary_value(second, tag).find(2)->second), 1e-3f);
  EXPECT_EQ(tag, "lr");

  const auto third = decode(records[3]);
  EXPECT_EQ(third.find(2)->second.number, 9u);
  const auto value = summary_value(third, tag);
  EXPECT_EQ(tag, "weights/w");
  const auto histogram = decode(value.find(5)->second.bytes);
  EXPECT_EQ(as_double(histogram.find(1)->second), 0.0);    // min
  EXPECT_EQ(as_double(histogram.find(2)->second), 9.0);    // max
  EXPECT_EQ(as_double(histogram.find(3)->second), 10.0);   // count
  EXPECT_EQ(as_double(histogram.find(4)->second), 45.0);   // sum
  EXPECT_EQ(as_double(histogram.find(5)->second), 285.0);  // sum of squares
  EXPECT_EQ(packed_doubles(histogram.find(6)->second),
            (std::vector<double>{1.8, 3.6, 5.4, 7.2, 9.0}));
  EXPECT_EQ(packed_doubles(histogram.find(7)->second), (std::vector<double>{2, 2, 2, 2, 2}));
}

TEST(TensorBoardWriter, TwoWritersInOneFolderMakeTwoFiles) {
  const fs::path directory = scratch_directory();
  const TensorBoardWriter first(directory), second(directory);
  EXPECT_NE(first.file(), second.file());
  EXPECT_EQ(std::distance(fs::directory_iterator(directory), fs::directory_iterator()), 2);
}

TEST(TensorBoardWriter, AFolderThatCannotBeMadeIsAnErrorNamingIt) {
  const fs::path directory = scratch_directory();
  fs::create_directories(directory);
  std::ofstream(directory / "a-file") << "x";
  EXPECT_THROW(
      {
        try {
          TensorBoardWriter writer(directory / "a-file");
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("TensorBoard folder"), std::string::npos)
              << e.what();
          EXPECT_NE(std::string(e.what()).find("a-file"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
  TensorBoardWriter writer(directory);
  EXPECT_THROW(writer.add_histogram("ids", arange(4, kInt64), 0), Error);
}

}  // namespace
}  // namespace minidl
