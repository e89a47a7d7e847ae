#pragma once
// TFRecord files, the container of TensorBoard's event files: each record is
//   uint64 length | uint32 masked CRC-32C of the length's 8 bytes | data | uint32 masked CRC-32C
//   of the data
// all little-endian (TensorFlow's tensorflow/core/lib/io/record_writer.cc documents the format).
// The CRC is CRC-32C (Castagnoli), "masked" as TensorFlow does so that a CRC of data holding
// CRCs is not itself a plain CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

namespace minidl::train {

// CRC-32C of `bytes` (the check value of "123456789" is 0xe3069283).
uint32_t crc32c(std::string_view bytes);
// TFRecord's masked form of a CRC-32C.
uint32_t masked_crc32c(std::string_view bytes);

// Appends records to a file, each written and flushed whole, so that a process killed between two
// records leaves every earlier one readable (a record cut short by a kill mid-write fails its
// length or CRC, and readers stop there).
class TfRecordWriter {
 public:
  // Creates `path` (refusing one that exists: event files are named to be unique).
  explicit TfRecordWriter(std::filesystem::path path);
  ~TfRecordWriter();
  TfRecordWriter(const TfRecordWriter&) = delete;
  TfRecordWriter& operator=(const TfRecordWriter&) = delete;

  // Throws minidl::Error with the system's reason ("No space left on device") on failure.
  void append(std::string_view data);
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
};

}  // namespace minidl::train
