#pragma once
// Whole files into memory, for the dataset readers (the largest, Fashion-MNIST's training
// images, is 47 MB once decompressed).
#include <cstdint>
#include <filesystem>
#include <vector>

namespace minidl::data {

// The bytes of `path`. Throws minidl::Error naming the file when it is missing, is not a
// regular file, or cannot be read in full.
std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path);

}  // namespace minidl::data
