#pragma once
// One sample of a dataset, as Dataset::get returns it.
#include <cstdint>

#include "minidl/core/tensor.h"

namespace minidl::data {

struct Example {
  Tensor image;       // [C, H, W], the dataset's ImageSpec (uint8 unless transforms convert it)
  int64_t label = 0;  // the class, in [0, num_classes)
};

}  // namespace minidl::data
