#include "minidl/core/safetensors_format.h"

#include <algorithm>
#include <array>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "minidl/core/error.h"

namespace minidl::serialize {

namespace {

// ordered_json keeps the header's keys in the order they were read.
using Json = nlohmann::ordered_json;

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

// Every check below names the file (`source` must be in scope) and says what it expected.
#define SAFETENSORS_READ_CHECK(cond, ...) \
  MINIDL_CHECK(cond, "read_safetensors: ", source, ": ", __VA_ARGS__)

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

SafetensorsTensorRecord parse_tensor_record(const std::string& name, const Json& entry,
                                            uint64_t data_size, const std::string& source) {
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

  SafetensorsTensorRecord record;
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
  SAFETENSORS_READ_CHECK(value.is_object(), "\"", kSafetensorsMetadataKey,
                         "\" must be an object of ", "strings, found ", value.type_name());
  SafetensorsMetadata metadata;
  for (const auto& [key, entry] : value.items()) {
    SAFETENSORS_READ_CHECK(entry.is_string(), "\"", kSafetensorsMetadataKey, "\" entry '", key,
                           "' must be a string, found ", entry.type_name());
    metadata.emplace(key, entry.get<std::string>());
  }
  return metadata;
}

// The tensors, ordered by offset, must tile [0, data_size) exactly.
void check_data_section_coverage(std::vector<SafetensorsTensorRecord>& tensors, uint64_t data_size,
                                 const std::string& source) {
  std::stable_sort(tensors.begin(), tensors.end(),
                   [](const SafetensorsTensorRecord& a, const SafetensorsTensorRecord& b) {
                     return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
                   });
  uint64_t covered = 0;
  const SafetensorsTensorRecord* previous = nullptr;
  for (const SafetensorsTensorRecord& record : tensors) {
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

SafetensorsLayout parse_header(const std::string& text, uint64_t data_size,
                               const std::string& source) {
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

  SafetensorsLayout header;
  for (const auto& [key, value] : root.items()) {
    if (key == kSafetensorsMetadataKey)
      header.metadata = parse_metadata(value, source);
    else
      header.tensors.push_back(parse_tensor_record(key, value, data_size, source));
  }
  check_data_section_coverage(header.tensors, data_size, source);
  return header;
}

}  // namespace

SafetensorsLayout read_safetensors_layout(uint64_t file_size, const SafetensorsReadAt& read_at,
                                          const std::string& source) {
  SAFETENSORS_READ_CHECK(file_size >= kSafetensorsLengthFieldBytes, "the file is ", file_size,
                         " bytes long, too short for the 8-byte header length");
  std::array<uint8_t, kSafetensorsLengthFieldBytes> length_field{};
  read_at(0, kSafetensorsLengthFieldBytes, length_field.data());
  uint64_t header_length = 0;
  for (size_t i = 0; i < kSafetensorsLengthFieldBytes; ++i)
    header_length |= static_cast<uint64_t>(length_field[i]) << (8 * i);
  SAFETENSORS_READ_CHECK(header_length <= kMaxSafetensorsHeaderBytes, "the header length is ",
                         header_length, " bytes, expected at most ", kMaxSafetensorsHeaderBytes);
  const uint64_t after_length_field = file_size - kSafetensorsLengthFieldBytes;
  SAFETENSORS_READ_CHECK(header_length <= after_length_field, "the header length is ",
                         header_length, " bytes, but only ", after_length_field,
                         " bytes follow the length field in the ", file_size, "-byte file");

  std::string header_text(header_length, '\0');
  read_at(kSafetensorsLengthFieldBytes, header_length, header_text.data());
  const uint64_t data_start = kSafetensorsLengthFieldBytes + header_length;
  SafetensorsLayout layout = parse_header(header_text, file_size - data_start, source);
  layout.data_start = data_start;
  return layout;
}

std::string_view safetensors_dtype_name(DType dtype) {
  for (const DTypeName& entry : kDTypeNames)
    if (entry.dtype == dtype) return entry.name;
  MINIDL_INTERNAL_ASSERT(false, "no safetensors name for dtype ", dtype);
  return {};
}

#undef SAFETENSORS_READ_CHECK

}  // namespace minidl::serialize
