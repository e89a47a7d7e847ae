#pragma once
// Writing small dataset files (IDX, gzip, CIFAR-10) into temporary directories, for the reader
// and loader tests. Defined in dataset_files_support.cpp.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace minidl::data::testing {

// A new empty directory under the system's temporary directory, removed with its contents
// when this goes out of scope.
class TemporaryDirectory {
 public:
  TemporaryDirectory();
  ~TemporaryDirectory();
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// An IDX file: 00 00 <type> <rank>, big-endian dims, then `data` as it is.
std::vector<uint8_t> idx_bytes(uint8_t type, const std::vector<uint32_t>& dims,
                               const std::vector<uint8_t>& data);
// gzip-compressed `bytes` (zlib, one member).
std::vector<uint8_t> gzip_bytes(const std::vector<uint8_t>& bytes);
// CIFAR-10 records: labels[i], then images[i] (3072 bytes each).
std::vector<uint8_t> cifar10_bytes(const std::vector<uint8_t>& labels,
                                   const std::vector<uint8_t>& images);
// `count` bytes from a small deterministic generator (a linear congruential one), so test data
// is varied without depending on the code under test.
std::vector<uint8_t> pattern_bytes(size_t count, uint32_t seed);

void write_file(const std::filesystem::path& path, const std::vector<uint8_t>& bytes);

}  // namespace minidl::data::testing
