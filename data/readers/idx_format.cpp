#include "minidl/data/readers/idx_format.h"

#include <limits>
#include <string>

#include "minidl/core/error.h"

namespace minidl::data {

namespace {

constexpr size_t kMagicBytes = 4;  // two zeros, the type, the rank
constexpr size_t kDimensionBytes = 4;

const char* idx_type_name(uint8_t type) {
  switch (type) {
    case 0x08: return "unsigned byte";
    case 0x09: return "signed byte";
    case 0x0B: return "int16";
    case 0x0C: return "int32";
    case 0x0D: return "float32";
    case 0x0E: return "float64";
  }
  return "not an IDX type";
}

std::string hex_byte(uint8_t value) {
  const char digits[] = "0123456789abcdef";
  return std::string("0x") + digits[value >> 4] + digits[value & 0xf];
}

uint32_t big_endian_u32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace

IdxArray parse_idx(std::span<const uint8_t> bytes, int expected_rank, std::string_view source) {
  MINIDL_CHECK(bytes.size() >= kMagicBytes, "IDX file ", source, ": ends at byte ", bytes.size(),
               ", inside the 4-byte magic number (expected 00 00 <type> <rank>)");
  MINIDL_CHECK(bytes[0] == 0 && bytes[1] == 0, "IDX file ", source,
               ": bad magic number: bytes 0-1 are ", hex_byte(bytes[0]), " ", hex_byte(bytes[1]),
               ", expected 0x00 0x00 (is this an IDX file?)");
  MINIDL_CHECK(bytes[2] == kIdxUnsignedByte, "IDX file ", source, ": byte 2 (element type) is ",
               hex_byte(bytes[2]), " (", idx_type_name(bytes[2]), "), expected ",
               hex_byte(kIdxUnsignedByte), " (unsigned byte)");
  const int rank = bytes[3];
  MINIDL_CHECK(rank == expected_rank, "IDX file ", source, ": byte 3 (number of dimensions) is ",
               rank, ", expected ", expected_rank);
  const size_t header_bytes = kMagicBytes + kDimensionBytes * static_cast<size_t>(rank);
  MINIDL_CHECK(bytes.size() >= header_bytes, "IDX file ", source, ": ends at byte ", bytes.size(),
               ", inside the header, which holds ", rank, " dimensions and so ends at byte ",
               header_bytes, " (truncated file?)");

  IdxArray array;
  // The product of the dimensions, checked against overflow: it must fit in int64 and, with the
  // header, in size_t, or the data-length check below could wrap around.
  int64_t numel = 1;
  for (int d = 0; d < rank; ++d) {
    const size_t offset = kMagicBytes + kDimensionBytes * static_cast<size_t>(d);
    const int64_t size = big_endian_u32(bytes.data() + offset);
    array.dims.push_back(size);
    MINIDL_CHECK(
        !__builtin_mul_overflow(numel, size, &numel) &&
            static_cast<uint64_t>(numel) <= std::numeric_limits<size_t>::max() - header_bytes,
        "IDX file ", source, ": the dimensions read so far (", array.dims, ", up to byte ",
        offset + kDimensionBytes, ") multiply to more elements than any file can hold");
  }
  const size_t data_bytes = static_cast<size_t>(numel);
  const size_t expected_size = header_bytes + data_bytes;
  MINIDL_CHECK(bytes.size() >= expected_size, "IDX file ", source, ": ends at byte ", bytes.size(),
               ", but its header (dimensions ", array.dims, ") promises ", data_bytes,
               " data bytes from byte ", header_bytes, " to byte ", expected_size,
               " (truncated file?)");
  MINIDL_CHECK(bytes.size() == expected_size, "IDX file ", source, ": has ",
               bytes.size() - expected_size, " extra bytes after the data, which ends at byte ",
               expected_size, " by its header (dimensions ", array.dims, "); expected the file to ",
               "end there");
  array.data_offset = header_bytes;
  array.data = bytes.subspan(header_bytes, data_bytes);
  return array;
}

void check_idx_labels(const IdxArray& labels, int64_t num_classes, std::string_view source) {
  for (size_t i = 0; i < labels.data.size(); ++i)
    MINIDL_CHECK(labels.data[i] < num_classes, "IDX file ", source, ": label ", int{labels.data[i]},
                 " of sample ", i, " (at byte ", labels.data_offset + i,
                 ") is out of range, expected a class below ", num_classes);
}

}  // namespace minidl::data
