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
#include <functional>
#include <limits>
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

// ordered_json keeps the header's keys in the order they were written or read.
using Json = nlohmann::ordered_json;

constexpr std::string_view kMetadataKey = "__metadata__";
constexpr uint64_t kLengthFieldBytes = 8;
// The data section starts at a multiple of this (the header is padded with spaces), as the
// reference writer does, so a reader may map tensors in place.
constexpr uint64_t kDataAlignment = 8;

struct DTypeName {
  DType dtype;
  std::string_view name;
};
constexpr std::array<DTypeName, 8> kDTypeNames = {{{kFloat32, "F32"},
                                                   {kFloat64, "F64"},
                                                   {kFloat16, "F16"},
                                                   {kBFloat16, "BF16"},
                                                   {kInt32, "I32"},
                                                   {kInt64, "I64"},
                                                   {kUInt8, "U8"},
                                                   {kBool, "BOOL"}}};
constexpr std::string_view kSupportedDTypes = "F32, F64, F16, BF16, I32, I64, U8 or BOOL";
// safetensors dtypes without a minidl DType, told apart from names that mean nothing.
constexpr std::array<std::string_view, 12> kUnsupportedSafetensorsDTypes = {
    "I8",      "I16",     "U16",     "U32", "U64",     "C64",
    "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4",  "F6_E2M3", "F6_E3M2"};

std::string quoted(const std::filesystem::path& path) { return '"' + path.string() + '"'; }

// ==== reading ====

// Every check below names the file (`source` must be in scope) and says what it expected.
#define SAFETENSORS_READ_CHECK(cond, ...) \
  MINIDL_CHECK(cond, "read_safetensors: ", source, ": ", __VA_ARGS__)

// One tensor's entry in the header, validated.
struct TensorRecord {
  std::string name;
  DType dtype = kFloat32;
  Shape shape;
  uint64_t begin = 0;  // [begin, end) in the data section
  uint64_t end = 0;
};

struct ParsedHeader {
  std::vector<TensorRecord> tensors;  // ordered by offset
  SafetensorsMetadata metadata;
};

DType dtype_from_name(const Json& value, const std::string& name, const std::string& source) {
  SAFETENSORS_READ_CHECK(value.is_string(), "tensor '", name, "': \"dtype\" must be a string, ",
                         "found ", value.type_name());
  const std::string& text = value.get_ref<const std::string&>();
  for (const DTypeName& entry : kDTypeNames)
    if (entry.name == text) return entry.dtype;
  const bool known_elsewhere =
      std::find(kUnsupportedSafetensorsDTypes.begin(), kUnsupportedSafetensorsDTypes.end(), text) !=
      kUnsupportedSafetensorsDTypes.end();
  SAFETENSORS_READ_CHECK(false, "tensor '", name,
                         "': ", known_elsewhere ? "unsupported dtype '" : "unknown dtype '", text,
                         "'; expected ", kSupportedDTypes);
  return kFloat32;  // unreachable
}

// A JSON value that must be an integer in [0, 2^63): a dimension or an offset.
uint64_t non_negative_integer(const Json& value, const std::string& name, const char* field,
                              size_t index, const std::string& source) {
  SAFETENSORS_READ_CHECK(value.is_number_unsigned(), "tensor '", name, "': ", field, "[", index,
                         "] must be a non-negative integer, found ", value.dump());
  const uint64_t number = value.get<uint64_t>();
  SAFETENSORS_READ_CHECK(number <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()),
                         "tensor '", name, "': ", field, "[", index, "] is ", number,
                         ", expected at most 2^63 - 1");
  return number;
}

TensorRecord parse_tensor_record(const std::string& name, const Json& entry, uint64_t data_size,
                                 const std::string& source) {
  SAFETENSORS_READ_CHECK(entry.is_object(), "tensor '", name, "': expected an object with ",
                         "\"dtype\", \"shape\" and \"data_offsets\", found ", entry.type_name());
  for (const auto& [field, value] : entry.items()) {
    SAFETENSORS_READ_CHECK(field == "dtype" || field == "shape" || field == "data_offsets",
                           "tensor '", name, "': unexpected field \"", field, "\"; expected ",
                           "only \"dtype\", \"shape\" and \"data_offsets\"");
  }
  for (const char* field : {"dtype", "shape", "data_offsets"})
    SAFETENSORS_READ_CHECK(entry.contains(field), "tensor '", name, "': missing field \"", field,
                           "\"");

  TensorRecord record;
  record.name = name;
  record.dtype = dtype_from_name(entry["dtype"], name, source);

  const Json& shape = entry["shape"];
  SAFETENSORS_READ_CHECK(shape.is_array(), "tensor '", name, "': \"shape\" must be an array, ",
                         "found ", shape.type_name());
  // numel and bytes in 64 bits, so no product can wrap around to a small, plausible size.
  uint64_t numel = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    const uint64_t size = non_negative_integer(shape[d], name, "shape", d, source);
    record.shape.push_back(static_cast<int64_t>(size));
    const bool overflow = __builtin_mul_overflow(numel, size, &numel);
    SAFETENSORS_READ_CHECK(
        !overflow && numel <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()),
        "tensor '", name, "': shape ", shape.dump(), " has more elements ", "than fit in 63 bits");
  }
  uint64_t expected_bytes = 0;
  const bool bytes_overflow =
      __builtin_mul_overflow(numel, element_size(record.dtype), &expected_bytes);
  SAFETENSORS_READ_CHECK(!bytes_overflow, "tensor '", name, "': shape ", shape.dump(), " of ",
                         safetensors_dtype_name(record.dtype),
                         " has more bytes than fit in 64 bits");

  const Json& offsets = entry["data_offsets"];
  SAFETENSORS_READ_CHECK(offsets.is_array() && offsets.size() == 2, "tensor '", name,
                         "': \"data_offsets\" must be an array [begin, end], found ",
                         offsets.dump());
  record.begin = non_negative_integer(offsets[0], name, "data_offsets", 0, source);
  record.end = non_negative_integer(offsets[1], name, "data_offsets", 1, source);
  SAFETENSORS_READ_CHECK(record.begin <= record.end, "tensor '", name, "': data_offsets [",
                         record.begin, ", ", record.end, "] end before they begin");
  SAFETENSORS_READ_CHECK(record.end <= data_size, "tensor '", name, "': data_offsets [",
                         record.begin, ", ", record.end, "] run past the end of the data ",
                         "section, which is ", data_size, " bytes long");
  SAFETENSORS_READ_CHECK(record.end - record.begin == expected_bytes, "tensor '", name,
                         "': data_offsets [", record.begin, ", ", record.end, "] span ",
                         record.end - record.begin, " bytes, expected ", expected_bytes,
                         " for shape ", shape.dump(), " of ", safetensors_dtype_name(record.dtype));
  return record;
}

SafetensorsMetadata parse_metadata(const Json& value, const std::string& source) {
  SAFETENSORS_READ_CHECK(value.is_object(), "\"", kMetadataKey, "\" must be an object of ",
                         "strings, found ", value.type_name());
  SafetensorsMetadata metadata;
  for (const auto& [key, entry] : value.items()) {
    SAFETENSORS_READ_CHECK(entry.is_string(), "\"", kMetadataKey, "\" entry '", key,
                           "' must be a string, found ", entry.type_name());
    metadata.emplace(key, entry.get<std::string>());
  }
  return metadata;
}

// The tensors, ordered by offset, must tile [0, data_size) exactly.
void check_data_section_coverage(std::vector<TensorRecord>& tensors, uint64_t data_size,
                                 const std::string& source) {
  std::stable_sort(tensors.begin(), tensors.end(),
                   [](const TensorRecord& a, const TensorRecord& b) {
                     return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
                   });
  uint64_t covered = 0;
  const TensorRecord* previous = nullptr;
  for (const TensorRecord& record : tensors) {
    SAFETENSORS_READ_CHECK(record.begin >= covered, "tensor '", record.name, "' at [", record.begin,
                           ", ", record.end, ") overlaps tensor '", previous ? previous->name : "",
                           "' at [", previous ? previous->begin : 0, ", ", covered, ")");
    SAFETENSORS_READ_CHECK(record.begin == covered, "the data section has a gap: tensor '",
                           record.name, "' begins at byte ", record.begin, ", expected ", covered,
                           previous ? " where tensor '" + previous->name + "' ends"
                                    : std::string(" (the start of the data section)"));
    covered = record.end;
    previous = &record;
  }
  SAFETENSORS_READ_CHECK(covered == data_size, "the data section is ", data_size,
                         " bytes long but its tensors cover ", covered, "; the file has ",
                         data_size - covered, " unexpected trailing bytes");
}

ParsedHeader parse_header(const std::string& text, uint64_t data_size, const std::string& source) {
  SAFETENSORS_READ_CHECK(!text.empty() && text.front() == '{',
                         "the header must be a JSON object starting with '{', ", "found ",
                         text.empty()
                             ? std::string("an empty header")
                             : "byte " + std::to_string(static_cast<unsigned char>(text.front())));
  // nlohmann keeps the last of duplicate keys; a duplicate tensor name is rejected instead.
  std::unordered_set<std::string> names;
  const auto reject_duplicate_names = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::key && depth == 1) {
      const std::string& name = parsed.get_ref<const std::string&>();
      SAFETENSORS_READ_CHECK(names.insert(name).second, "the header names '", name,
                             "' more than once; expected unique names");
    }
    return true;
  };
  Json root;
  try {
    root = Json::parse(text, reject_duplicate_names);
  } catch (const Json::exception& error) {
    SAFETENSORS_READ_CHECK(false, "the header is not valid JSON: ", error.what());
  }
  SAFETENSORS_READ_CHECK(root.is_object(), "the header must be a JSON object, found ",
                         root.type_name());

  ParsedHeader header;
  for (const auto& [key, value] : root.items()) {
    if (key == kMetadataKey)
      header.metadata = parse_metadata(value, source);
    else
      header.tensors.push_back(parse_tensor_record(key, value, data_size, source));
  }
  check_data_section_coverage(header.tensors, data_size, source);
  return header;
}

// BOOL bytes other than 0 and 1 are not valid C++ bools; they are refused, never loaded.
void check_bool_bytes(const Tensor& tensor, const std::string& name, const std::string& source) {
  const auto* bytes = static_cast<const uint8_t*>(tensor.data_ptr());
  const auto* bad = std::find_if(bytes, bytes + tensor.numel(), [](uint8_t b) { return b > 1; });
  SAFETENSORS_READ_CHECK(bad == bytes + tensor.numel(), "tensor '", name, "' (BOOL) holds byte ",
                         static_cast<int>(*bad), " at element ", bad - bytes, "; expected 0 or 1");
}

// Copies `size` bytes at `offset` of the file into `destination`.
using ReadAt = std::function<void(uint64_t offset, size_t size, void* destination)>;

SafetensorsContents decode(uint64_t file_size, const ReadAt& read_at, const std::string& source) {
  SAFETENSORS_READ_CHECK(file_size >= kLengthFieldBytes, "the file is ", file_size,
                         " bytes long, too short for the 8-byte header length");
  std::array<uint8_t, kLengthFieldBytes> length_field{};
  read_at(0, kLengthFieldBytes, length_field.data());
  uint64_t header_length = 0;
  for (size_t i = 0; i < kLengthFieldBytes; ++i)
    header_length |= static_cast<uint64_t>(length_field[i]) << (8 * i);
  SAFETENSORS_READ_CHECK(header_length <= kMaxSafetensorsHeaderBytes, "the header length is ",
                         header_length, " bytes, expected at most ", kMaxSafetensorsHeaderBytes);
  const uint64_t after_length_field = file_size - kLengthFieldBytes;
  SAFETENSORS_READ_CHECK(header_length <= after_length_field, "the header length is ",
                         header_length, " bytes, but only ", after_length_field,
                         " bytes follow the length field in the ", file_size, "-byte file");

  std::string header_text(header_length, '\0');
  read_at(kLengthFieldBytes, header_length, header_text.data());
  const uint64_t data_start = kLengthFieldBytes + header_length;
  ParsedHeader header = parse_header(header_text, file_size - data_start, source);

  SafetensorsContents contents;
  contents.metadata = std::move(header.metadata);
  for (TensorRecord& record : header.tensors) {
    Tensor tensor = empty(record.shape, record.dtype);
    if (record.end > record.begin)
      read_at(data_start + record.begin, record.end - record.begin, tensor.data_ptr());
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

// The JSON header, padded with spaces to a multiple of kDataAlignment after the length field.
std::string encode_header(const NamedTensorList& tensors, const SafetensorsMetadata& metadata,
                          const std::string& target) {
  Json header = Json::object();
  if (!metadata.empty()) {
    Json entries = Json::object();
    for (const auto& [key, value] : metadata) entries[key] = value;
    header[std::string(kMetadataKey)] = std::move(entries);
  }
  std::unordered_set<std::string_view> names;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    MINIDL_CHECK(name != kMetadataKey, "write_safetensors: ", target, ": a tensor cannot be ",
                 "named \"", kMetadataKey, "\", which the format reserves for metadata");
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
  const uint64_t unaligned = kLengthFieldBytes + text.size();
  text.append((kDataAlignment - unaligned % kDataAlignment) % kDataAlignment, ' ');
  return text;
}

}  // namespace

std::string_view safetensors_dtype_name(DType dtype) {
  for (const DTypeName& entry : kDTypeNames)
    if (entry.dtype == dtype) return entry.name;
  MINIDL_INTERNAL_ASSERT(false, "no safetensors name for dtype ", dtype);
  return {};
}

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
  std::array<uint8_t, kLengthFieldBytes> length_field{};
  for (size_t i = 0; i < kLengthFieldBytes; ++i)
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
