#pragma once
// The shape and dtype shared by every image of a dataset: one image is a contiguous
// [channels, height, width] array of `dtype` (uint8 pixels as read from disk; float32 after
// ToFloat or Normalize).
#include <cstddef>
#include <cstdint>
#include <ostream>

#include "minidl/core/dtype.h"
#include "minidl/core/tensor_options.h"

namespace minidl::data {

struct ImageSpec {
  int64_t channels = 0;
  int64_t height = 0;
  int64_t width = 0;
  DType dtype = kUInt8;

  Shape shape() const { return {channels, height, width}; }
  int64_t numel() const { return channels * height * width; }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(dtype); }
  friend bool operator==(const ImageSpec&, const ImageSpec&) = default;
};

// "uint8 [1, 28, 28]"
inline std::ostream& operator<<(std::ostream& out, const ImageSpec& spec) {
  return out << spec.dtype << " [" << spec.channels << ", " << spec.height << ", " << spec.width
             << "]";
}

}  // namespace minidl::data
