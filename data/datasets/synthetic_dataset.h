#pragma once
// A synthetic image-classification dataset of any shape and class count, for benchmarks and
// tests: uint8 images [size, C, H, W] and int64 labels, generated from (seed, index) by Philox,
// so the same arguments always give the same bytes. Each class has a random prototype image,
// and each sample is its class's prototype averaged with its own noise: a model can learn the
// classes, which makes it a quick end-to-end check as well as a loader benchmark.
#include <cstdint>
#include <memory>

#include "minidl/core/tensor_options.h"
#include "minidl/data/datasets/in_memory_dataset.h"

namespace minidl::data {

// `image_shape` is [C, H, W], every size positive; num_classes >= 1.
std::shared_ptr<InMemoryDataset> make_synthetic_dataset(int64_t size, const Shape& image_shape,
                                                        int64_t num_classes, uint64_t seed = 0);

}  // namespace minidl::data
