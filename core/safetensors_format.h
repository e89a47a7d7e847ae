#pragma once
// The safetensors header, read and validated without making a tensor: everything
// read_safetensors (core/safetensors.h, which documents the format and its checks) trusts before
// it allocates a byte for a tensor. A file of its own, needing only core/error.cpp, so the fuzz
// target (tests/fuzz/safetensors_fuzzer.cpp) builds it in seconds rather than all of minidl.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "minidl/core/dtype.h"

namespace minidl::serialize {

// The header's "__metadata__": free-form string keys and values (UTF-8).
using SafetensorsMetadata = std::map<std::string, std::string>;

// The largest header accepted when reading (the reference implementation's limit).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;
// The key the format reserves for metadata.
inline constexpr std::string_view kSafetensorsMetadataKey = "__metadata__";
// The header length's field: unsigned 64-bit little-endian, first in the file.
inline constexpr uint64_t kSafetensorsLengthFieldBytes = 8;
// The data section starts at a multiple of this (the header is padded with spaces), as the
// reference writer does, so a reader may map tensors in place.
inline constexpr uint64_t kSafetensorsDataAlignment = 8;

// One tensor's entry in the header, validated: its elements are the bytes [begin, end) of the
// data section, exactly numel * element size of them.
struct SafetensorsTensorRecord {
  std::string name;
  DType dtype = kFloat32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

struct SafetensorsLayout {
  uint64_t data_start = 0;                       // where the data section begins in the file
  std::vector<SafetensorsTensorRecord> tensors;  // ordered by offset, tiling the data section
  SafetensorsMetadata metadata;
};

// Copies `size` bytes at `offset` of a file into `destination`.
using SafetensorsReadAt = std::function<void(uint64_t offset, size_t size, void* destination)>;

// Reads the length field and the header of a `file_size`-byte file through `read_at`, and checks
// them (core/safetensors.h, "Reading validates before it trusts"), all but the BOOL bytes, which
// are data. Throws minidl::Error "read_safetensors: <source>: ..." naming what was expected.
SafetensorsLayout read_safetensors_layout(uint64_t file_size, const SafetensorsReadAt& read_at,
                                          const std::string& source);

// The safetensors name of a dtype: "F32", "F64", "F16", "BF16", "I32", "I64", "U8", "BOOL".
std::string_view safetensors_dtype_name(DType dtype);

}  // namespace minidl::serialize
