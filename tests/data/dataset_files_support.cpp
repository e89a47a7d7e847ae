#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <fstream>
#include <stdexcept>

#include "dataset_files.h"

namespace minidl::data::testing {

TemporaryDirectory::TemporaryDirectory() {
  static std::atomic<int> counter{0};
  path_ = std::filesystem::temp_directory_path() /
          ("minidl_data_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TemporaryDirectory::~TemporaryDirectory() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::vector<uint8_t> idx_bytes(uint8_t type, const std::vector<uint32_t>& dims,
                               const std::vector<uint8_t>& data) {
  std::vector<uint8_t> bytes = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t dim : dims)
    for (int shift = 24; shift >= 0; shift -= 8)
      bytes.push_back(static_cast<uint8_t>(dim >> shift));
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

std::vector<uint8_t> gzip_bytes(const std::vector<uint8_t>& bytes) {
  z_stream stream{};
  // 16 + MAX_WBITS: a gzip wrapper; memLevel 8 is zlib's default.
  if (deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("gzip_bytes: deflateInit2 failed");
  std::vector<uint8_t> out(deflateBound(&stream, static_cast<uLong>(bytes.size())) + 64);
  stream.next_in = const_cast<Bytef*>(bytes.data());
  stream.avail_in = static_cast<uInt>(bytes.size());
  stream.next_out = out.data();
  stream.avail_out = static_cast<uInt>(out.size());
  const int status = deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  if (status != Z_STREAM_END) throw std::runtime_error("gzip_bytes: deflate did not finish");
  return out;
}

std::vector<uint8_t> cifar10_bytes(const std::vector<uint8_t>& labels,
                                   const std::vector<uint8_t>& images) {
  constexpr size_t kImageBytes = 3072;
  if (images.size() != labels.size() * kImageBytes)
    throw std::invalid_argument("cifar10_bytes: expected 3072 image bytes per label");
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i < labels.size(); ++i) {
    bytes.push_back(labels[i]);
    bytes.insert(bytes.end(), images.begin() + static_cast<std::ptrdiff_t>(i * kImageBytes),
                 images.begin() + static_cast<std::ptrdiff_t>((i + 1) * kImageBytes));
  }
  return bytes;
}

std::vector<uint8_t> pattern_bytes(size_t count, uint32_t seed) {
  std::vector<uint8_t> bytes(count);
  uint32_t state = seed * 2654435761u + 1;
  for (uint8_t& byte : bytes) {
    state = state * 1664525u + 1013904223u;  // Numerical Recipes' LCG
    byte = static_cast<uint8_t>(state >> 24);
  }
  return bytes;
}

void write_file(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  if (!file) throw std::runtime_error("write_file: cannot write " + path.string());
}

}  // namespace minidl::data::testing
