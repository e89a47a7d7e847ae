#pragma once
// Where the readers look for datasets when given no directory: the folder named by the
// environment variable MINIDL_DATA when it is set and non-empty, else /usr/share/datasets
// (where Debian's dataset-* packages install). Each dataset has its own subfolder, as there:
//   <root>/fashion-mnist/         train-images-idx3-ubyte.gz, ... (package dataset-fashion-mnist)
//   <root>/cifar-10-batches-bin/  data_batch_1.bin, ..., test_batch.bin
#include <filesystem>

namespace minidl::data {

inline constexpr const char* kDefaultDataRoot = "/usr/share/datasets";
inline constexpr const char* kDataRootVariable = "MINIDL_DATA";

std::filesystem::path data_root();

}  // namespace minidl::data
