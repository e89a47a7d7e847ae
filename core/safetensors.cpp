// safetensors files: writing (atomic, through core/atomic_file.h) and reading (validated).
// Format and guarantees in safetensors.h.
#include "minidl/core/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "minidl/core/atomic_file.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/error.h"

namespace minidl::serialize {

// Tensor bytes are copied as they are: little-endian on disk and in memory.
static_assert(std::endian::native == std::endian::little,
              "minidl's safetensors code assumes a little-endian host");

namespace {

// ordered_json keeps the header's keys in the order they were written.
using Json = nlohmann::ordered_json;

std::string quoted(const std::filesystem::path& path) { return '"' + path.string() + '"'; }

// ==== reading ====

// Every check below names the file (`source` must be in scope) and says what it expected.
#define SAFETENSORS_READ_CHECK(cond, ...) \
  MINIDL_CHECK(cond, "read_safetensors: ", source, ": ", __VA_ARGS__)

// BOOL bytes other than 0 and 1 are not valid C++ bools; they are refused, never loaded.
void check_bool_bytes(const Tensor& tensor, const std::string& name, const std::string& source) {
  const auto* bytes = static_cast<const uint8_t*>(tensor.data_ptr());
  const auto* bad = std::find_if(bytes, bytes + tensor.numel(), [](uint8_t b) { return b > 1; });
  SAFETENSORS_READ_CHECK(bad == bytes + tensor.numel(), "tensor '", name, "' (BOOL) holds byte ",
                         static_cast<int>(*bad), " at element ", bad - bytes, "; expected 0 or 1");
}

SafetensorsContents decode(uint64_t file_size, const SafetensorsReadAt& read_at,
                           const std::string& source) {
  SafetensorsLayout layout = read_safetensors_layout(file_size, read_at, source);
  SafetensorsContents contents;
  contents.metadata = std::move(layout.metadata);
  for (SafetensorsTensorRecord& record : layout.tensors) {
    Tensor tensor = empty(record.shape, record.dtype);
    if (record.end > record.begin)
      read_at(layout.data_start + record.begin, record.end - record.begin, tensor.data_ptr());
    if (record.dtype == kBool) check_bool_bytes(tensor, record.name, source);
    contents.tensors.emplace_back(std::move(record.name), std::move(tensor));
  }
  return contents;
}

// A file opened for reading, closed on every path out.
class ReadOnlyFile {
 public:
  explicit ReadOnlyFile(const std::filesystem::path& path) : source_(quoted(path)) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    MINIDL_CHECK(fd_ >= 0, "read_safetensors: cannot open ", source_, ": ", std::strerror(errno));
  }
  ~ReadOnlyFile() { ::close(fd_); }
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;

  uint64_t size() const {
    struct stat info {};
    MINIDL_CHECK(::fstat(fd_, &info) == 0, "read_safetensors: cannot stat ", source_, ": ",
                 std::strerror(errno));
    MINIDL_CHECK(S_ISREG(info.st_mode), "read_safetensors: ", source_, " is not a regular file");
    return static_cast<uint64_t>(info.st_size);
  }

  void read_at(uint64_t offset, size_t size, void* destination) const {
    auto* out = static_cast<char*>(destination);
    while (size > 0) {
      const ssize_t got = ::pread(fd_, out, size, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      MINIDL_CHECK(got >= 0, "read_safetensors: ", source_, ": reading ", size, " bytes at ",
                   "offset ", offset, " failed: ", std::strerror(errno));
      // The size was checked against fstat, so a short read means the file shrank meanwhile.
      MINIDL_CHECK(got > 0, "read_safetensors: ", source_, ": the file ended at byte ", offset,
                   " while ", size, " more bytes were expected; was it changed while being read?");
      out += got;
      offset += static_cast<uint64_t>(got);
      size -= static_cast<size_t>(got);
    }
  }

  const std::string& source() const { return source_; }

 private:
  std::string source_;
  int fd_ = -1;
};

#undef SAFETENSORS_READ_CHECK

// ==== writing ====

// The JSON header, padded with spaces to a multiple of kSafetensorsDataAlignment after the length
// field.
std::string encode_header(const NamedTensorList& tensors, const SafetensorsMetadata& metadata,
                          const std::string& target) {
  Json header = Json::object();
  if (!metadata.empty()) {
    Json entries = Json::object();
    for (const auto& [key, value] : metadata) entries[key] = value;
    header[std::string(kSafetensorsMetadataKey)] = std::move(entries);
  }
  std::unordered_set<std::string_view> names;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    MINIDL_CHECK(name != kSafetensorsMetadataKey, "write_safetensors: ", target,
                 ": a tensor cannot be ", "named \"", kSafetensorsMetadataKey,
                 "\", which the format reserves for metadata");
    MINIDL_CHECK(names.insert(name).second, "write_safetensors: ", target, ": the name '", name,
                 "' is given twice; expected unique names");
    MINIDL_CHECK(tensor.defined(), "write_safetensors: ", target, ": tensor '", name,
                 "' is undefined");
    const uint64_t bytes = tensor.nbytes();
    header[name] = {{"dtype", safetensors_dtype_name(tensor.dtype())},
                    {"shape", tensor.sizes()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const Json::exception& error) {
    MINIDL_CHECK(false, "write_safetensors: ", target, ": names and metadata must be UTF-8 ",
                 "text: ", error.what());
  }
  MINIDL_CHECK(text.size() <= kMaxSafetensorsHeaderBytes, "write_safetensors: ", target,
               ": the header would be ", text.size(), " bytes, more than readers accept (",
               kMaxSafetensorsHeaderBytes, "); use fewer tensors or less metadata");
  const uint64_t unaligned = kSafetensorsLengthFieldBytes + text.size();
  text.append((kSafetensorsDataAlignment - unaligned % kSafetensorsDataAlignment) %
                  kSafetensorsDataAlignment,
              ' ');
  return text;
}

}  // namespace

const Tensor* SafetensorsContents::find(std::string_view name) const {
  for (const auto& [tensor_name, tensor] : tensors)
    if (tensor_name == name) return &tensor;
  return nullptr;
}

void write_safetensors(const std::filesystem::path& path, const NamedTensorList& tensors,
                       const SafetensorsMetadata& metadata) {
  NoGradGuard no_grad;
  const std::string target = quoted(path);
  // Everything that can be refused is checked before a file is created.
  const std::string header = encode_header(tensors, metadata, target);

  AtomicFileWriter file(path, "write_safetensors");
  std::array<uint8_t, kSafetensorsLengthFieldBytes> length_field{};
  for (size_t i = 0; i < kSafetensorsLengthFieldBytes; ++i)
    length_field[i] = static_cast<uint8_t>(static_cast<uint64_t>(header.size()) >> (8 * i));
  file.write(length_field.data(), length_field.size());
  file.write(header.data(), header.size());
  // One tensor at a time on the host, so a checkpoint never needs a second full copy in memory.
  for (const auto& [name, tensor] : tensors) {
    if (tensor.numel() == 0) continue;
    const Tensor host = tensor.detach().cpu().contiguous();
    file.write(host.data_ptr(), host.nbytes());
  }
  file.commit();
}

SafetensorsContents read_safetensors(const std::filesystem::path& path) {
  const ReadOnlyFile file(path);
  return decode(
      file.size(),
      [&file](uint64_t offset, size_t size, void* destination) {
        file.read_at(offset, size, destination);
      },
      file.source());
}

SafetensorsContents parse_safetensors(const void* bytes, size_t size, const std::string& source) {
  const auto* begin = static_cast<const char*>(bytes);
  return decode(
      size,
      [begin, size](uint64_t offset, size_t count, void* destination) {
        MINIDL_INTERNAL_ASSERT(offset <= size && count <= size - offset, "read of ", count,
                               " bytes at ", offset, " outside the ", size, "-byte buffer");
        std::memcpy(destination, begin + offset, count);
      },
      source);
}

}  // namespace minidl::serialize
