#pragma once
// uint8 pixels to float32 in [0, 1] (v / 255), as torchvision's ToTensor.
#include "minidl/data/transforms/transform.h"

namespace minidl::data {

class ToFloat final : public Transform {
 public:
  ImageSpec output_spec(const ImageSpec& input) const override;
  void apply(const SampleKey& sample, const ImageSpec& input_spec, const void* input,
             void* output) const override;
  std::string name() const override { return "ToFloat"; }
};

}  // namespace minidl::data
