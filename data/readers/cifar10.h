#pragma once
// CIFAR-10, binary version (cifar-10-binary.tar.gz, which unpacks to cifar-10-batches-bin/):
//   train split: data_batch_1.bin .. data_batch_5.bin (50,000 images)
//   test split:  test_batch.bin (10,000 images)
// Images are uint8 [N, 3, 32, 32] and labels int64 [N] in [0, 10).
#include <array>
#include <filesystem>
#include <memory>
#include <vector>

#include "minidl/data/datasets/in_memory_dataset.h"
#include "minidl/data/readers/cifar10_format.h"
#include "minidl/data/readers/split.h"

namespace minidl::data {

inline constexpr const char* kCifar10Folder = "cifar-10-batches-bin";
inline constexpr std::array<const char*, kCifar10NumClasses> kCifar10ClassNames = {
    "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};

// One split from `directory`, or, when it is empty, from <data_root()>/cifar-10-batches-bin.
// Every file is validated (see data/readers/cifar10_format.h); a problem throws minidl::Error
// naming the file, the byte offset and what was expected.
std::shared_ptr<InMemoryDataset> read_cifar10(Split split,
                                              const std::filesystem::path& directory = {});
// The records of `files`, in order, as one dataset.
std::shared_ptr<InMemoryDataset> read_cifar10_files(
    const std::vector<std::filesystem::path>& files);

}  // namespace minidl::data
