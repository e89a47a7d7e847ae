#pragma once
// safetensors files: the checkpoint format of minidl, readable by PyTorch's and Hugging Face's
// `safetensors` loaders and back (https://github.com/huggingface/safetensors).
//
// Layout of a file:
//   8 bytes    N, the header length, unsigned 64-bit little-endian
//   N bytes    JSON: {"<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]},
//                     ..., "__metadata__": {"<key>": "<string value>", ...}}
//              padded with spaces so the data section starts 8-byte aligned
//   the rest   the data section: each tensor's elements, row-major, little-endian, at
//              [begin, end) counted from the start of the data section
// dtypes: F32 F64 F16 BF16 I32 I64 U8 BOOL (minidl's DTypes; other safetensors dtypes are
// reported as unsupported).
//
// Writing is atomic (core/atomic_file.h): the bytes go to a temporary file in the same directory
// ("<path>.tmp-<pid>-<n>"), flushed to disk (fsync) and renamed over `path`; a crash or a failed
// write never leaves a partial file under `path`, and an existing file there stays intact until
// the rename. A failed write removes its temporary file; a killed process may leave one behind.
//
// Reading validates before it trusts: the header length is at most kMaxSafetensorsHeaderBytes
// and fits in the file; the header is well-formed JSON with the fields above and no duplicate
// names; dtypes are known; shapes are non-negative with element and byte counts that fit in
// 64 bits; each tensor's offsets lie in the data section and span exactly numel * element size
// bytes; the tensors, ordered by offset, cover the data section exactly (no overlap, no gap, no
// trailing bytes); BOOL bytes are 0 or 1. Any failure is a minidl::Error naming the file and
// what was expected and found. Tensor memory is allocated only for bytes the file really holds.
//
// Namespace minidl::serialize: the file format alone, in core/ so that every layer above can
// use it. nn::save(module, path) and nn::load(module, path, strict) (nn/serialize.h) are built on
// these functions; a training checkpoint adds optimizer and scheduler state through the same
// tensors + metadata (see optim/optimizer_state_dict.h).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "minidl/core/safetensors_format.h"
#include "minidl/core/tensor.h"

namespace minidl::serialize {

// Tensors with their names, in order. Names are unique and never "__metadata__".
using NamedTensorList = std::vector<std::pair<std::string, Tensor>>;

struct SafetensorsContents {
  // CPU, contiguous tensors in the order of their data in the file: for a file written by
  // write_safetensors, the order they were given in.
  NamedTensorList tensors;
  SafetensorsMetadata metadata;

  // The tensor called `name`, or null.
  const Tensor* find(std::string_view name) const;
};

// Writes `tensors` (any device, layout or dtype; each is copied to the CPU as contiguous bytes)
// and `metadata` to `path`, atomically (see above). Throws minidl::Error naming `path` on
// duplicate or reserved names, undefined tensors, invalid UTF-8, or an I/O failure.
void write_safetensors(const std::filesystem::path& path, const NamedTensorList& tensors,
                       const SafetensorsMetadata& metadata = {});

// Reads and validates a whole file (see above).
SafetensorsContents read_safetensors(const std::filesystem::path& path);

// The same validation and result for the bytes of a file already in memory; `source` names
// them in error messages (for files received over a network, say). The header's reading and
// checks alone are core/safetensors_format.h's read_safetensors_layout.
SafetensorsContents parse_safetensors(const void* bytes, size_t size, const std::string& source);

}  // namespace minidl::serialize
