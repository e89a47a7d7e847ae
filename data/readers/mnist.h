#pragma once
// MNIST-format datasets (MNIST, Fashion-MNIST): IDX files, each raw or gzip-compressed.
//   train split: train-images-idx3-ubyte, train-labels-idx1-ubyte (60,000 images)
//   test split:  t10k-images-idx3-ubyte,  t10k-labels-idx1-ubyte  (10,000 images)
// with or without a ".gz" suffix, whichever exists. Images are uint8 [N, 1, 28, 28] and labels
// int64 [N] in [0, 10).
#include <array>
#include <filesystem>
#include <memory>

#include "minidl/data/datasets/in_memory_dataset.h"
#include "minidl/data/readers/split.h"

namespace minidl::data {

inline constexpr int64_t kMnistNumClasses = 10;
inline constexpr const char* kFashionMnistFolder = "fashion-mnist";
inline constexpr std::array<const char*, kMnistNumClasses> kFashionMnistClassNames = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

// Reads one split from `directory`. Every file is validated (see data/readers/idx_format.h); a
// problem throws minidl::Error naming the file, the byte offset and what was expected.
std::shared_ptr<InMemoryDataset> read_mnist(const std::filesystem::path& directory, Split split);

// Fashion-MNIST from `directory`, or, when it is empty, from fashion_mnist_directory().
std::shared_ptr<InMemoryDataset> read_fashion_mnist(Split split,
                                                    const std::filesystem::path& directory = {});
// <data_root()>/fashion-mnist: /usr/share/datasets/fashion-mnist unless MINIDL_DATA is set.
std::filesystem::path fashion_mnist_directory();

}  // namespace minidl::data
