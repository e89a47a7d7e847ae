#include "minidl/data/readers/token_file.h"

#include "minidl/core/atomic_file.h"
#include "minidl/data/readers/file_bytes.h"
#include "minidl/data/readers/token_file_format.h"

namespace minidl::data {

std::vector<uint16_t> read_token_file(const std::filesystem::path& path, int64_t vocab_size) {
  return parse_token_file(read_file_bytes(path), vocab_size, path.string());
}

void write_token_file(const std::filesystem::path& path, std::span<const uint16_t> tokens) {
  const std::vector<uint8_t> bytes = token_file_bytes(tokens);
  AtomicFileWriter file(path, "write_token_file");
  file.write(bytes.data(), bytes.size());
  file.commit();
}

}  // namespace minidl::data
