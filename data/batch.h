#pragma once
// One batch from a DataLoader, on the loader's target device.
#include <cstdint>

#include "minidl/core/tensor.h"

namespace minidl::data {

struct Batch {
  Tensor images;   // [B, C, H, W]: the dataset's dtype (uint8 until something converts it),
                   // float32 after the loader's augmentation normalises
  Tensor labels;   // int64 [B]
  Tensor indices;  // int64 [B]: the dataset index of each sample, which device-side random
                   // augmentation draws from (data/transforms/batch_augment.h)
  int64_t epoch = 0;
  int64_t batch_index = 0;  // position of this batch in its epoch

  int64_t size() const { return labels.size(0); }
};

}  // namespace minidl::data
