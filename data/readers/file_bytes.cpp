#include "minidl/data/readers/file_bytes.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

#include "minidl/core/error.h"

namespace minidl::data {

std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  MINIDL_CHECK(std::filesystem::exists(status), "cannot read ", path.string(), ": no such file");
  MINIDL_CHECK(std::filesystem::is_regular_file(status), "cannot read ", path.string(),
               ": not a regular file");
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  MINIDL_CHECK(file.is_open(), "cannot open ", path.string(), ": ", std::strerror(errno));
  const std::streamoff size = file.tellg();
  MINIDL_CHECK(size >= 0, "cannot determine the size of ", path.string());
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  file.seekg(0);
  file.read(reinterpret_cast<char*>(bytes.data()), size);
  MINIDL_CHECK(file.gcount() == size, "reading ", path.string(), ": got ", file.gcount(),
               " of its ", size, " bytes");
  return bytes;
}

}  // namespace minidl::data
