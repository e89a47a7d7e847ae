#include "minidl/data/datasets/dataset.h"

#include "minidl/core/error.h"

namespace minidl::data {

Example Dataset::get(int64_t index, int64_t epoch) const {
  MINIDL_CHECK(index >= 0 && index < size(), "Dataset::get: index ", index,
               " is out of range for a dataset of ", size(), " samples");
  const ImageSpec spec = image_spec();
  Example example;
  example.image = empty(spec.shape(), spec.dtype);
  example.label = read(index, epoch, example.image.data_ptr());
  return example;
}

}  // namespace minidl::data
