#pragma once
// gzip decompression (zlib) for the dataset readers. Whether data is compressed is decided by
// its first two bytes (the gzip magic 1f 8b), not by the file name.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace minidl::data {

// A bound on decompressed sizes, so that a corrupt or hostile file cannot exhaust memory:
// 4 GiB, far above any dataset file minidl reads (Fashion-MNIST's largest is 47 MB).
inline constexpr size_t kMaxDecompressedBytes = size_t{4} << 30;

bool is_gzip(std::span<const uint8_t> bytes);

// The decompressed contents of gzip data: one member, or several concatenated (as
// `cat a.gz b.gz` makes). `source` names the data in errors. Throws minidl::Error, naming the
// compressed byte offset, when the data is corrupt, ends early (truncated), is followed by
// bytes that are not another gzip member, or inflates to more than `max_bytes`.
std::vector<uint8_t> gunzip(std::span<const uint8_t> bytes, std::string_view source,
                            size_t max_bytes = kMaxDecompressedBytes);

// `bytes` decompressed when they are gzip data, else `bytes` unchanged.
std::vector<uint8_t> decompress_if_gzip(std::vector<uint8_t> bytes, std::string_view source,
                                        size_t max_bytes = kMaxDecompressedBytes);

}  // namespace minidl::data
