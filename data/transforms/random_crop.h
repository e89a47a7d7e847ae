#pragma once
// Pads the image with `padding` zeros on every side, then cuts a [height, width] window at a
// random position (torchvision's RandomCrop(size, padding)). Works on any dtype. The position
// of sample i in epoch e depends only on (seed, e, i).
#include <cstdint>

#include "minidl/core/tensor_options.h"
#include "minidl/data/transforms/transform.h"

namespace minidl::data {

class RandomCrop final : public Transform {
 public:
  // `size` is the output [height, width]; one number means a square.
  explicit RandomCrop(Size2 size, int64_t padding = 0, uint64_t seed = 0);

  ImageSpec output_spec(const ImageSpec& input) const override;
  void apply(const SampleKey& sample, const ImageSpec& input_spec, const void* input,
             void* output) const override;
  bool is_random() const override { return true; }
  std::string name() const override;

  Size2 size() const { return size_; }
  int64_t padding() const { return padding_; }
  uint64_t seed() const { return seed_; }

 private:
  Size2 size_;
  int64_t padding_;
  uint64_t seed_;
};

}  // namespace minidl::data
