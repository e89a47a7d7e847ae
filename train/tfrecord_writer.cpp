#include "minidl/train/tfrecord_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "minidl/core/error.h"

namespace minidl::train {

namespace {

// The byte-at-a-time table of the reflected Castagnoli polynomial 0x82f63b78.
constexpr std::array<uint32_t, 256> make_crc32c_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) != 0 ? 0x82f63b78u : 0u);
    table[byte] = crc;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrc32cTable = make_crc32c_table();

void put_little_endian(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xffu));
}

}  // namespace

uint32_t crc32c(std::string_view bytes) {
  uint32_t crc = 0xffffffffu;
  for (const char c : bytes)
    crc = kCrc32cTable[(crc ^ static_cast<unsigned char>(c)) & 0xffu] ^ (crc >> 8);
  return crc ^ 0xffffffffu;
}

uint32_t masked_crc32c(std::string_view bytes) {
  const uint32_t crc = crc32c(bytes);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

TfRecordWriter::TfRecordWriter(std::filesystem::path path) : path_(std::move(path)) {
  // O_EXCL: never append to, or replace, a file that is already there.
  const int descriptor = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  MINIDL_CHECK(descriptor >= 0, "TensorBoard event file ", path_.string(), ": cannot create it (",
               std::strerror(errno), ")");
  file_ = ::fdopen(descriptor, "wb");
  if (file_ == nullptr) {
    const int error = errno;
    ::close(descriptor);
    throw Error("TensorBoard event file " + path_.string() + ": cannot open it (" +
                std::strerror(error) + ")");
  }
}

TfRecordWriter::~TfRecordWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void TfRecordWriter::append(std::string_view data) {
  std::string length;
  put_little_endian(length, data.size(), 8);
  std::string record = length;
  put_little_endian(record, masked_crc32c(length), 4);
  record.append(data);
  put_little_endian(record, masked_crc32c(data), 4);
  errno = 0;
  const bool written = std::fwrite(record.data(), 1, record.size(), file_) == record.size() &&
                       std::fflush(file_) == 0;
  const int error = errno;
  if (!written) std::clearerr(file_);
  MINIDL_CHECK(written, "TensorBoard event file ", path_.string(), ": writing a record failed (",
               error != 0 ? std::strerror(error) : "unknown error", ")");
}

}  // namespace minidl::train
