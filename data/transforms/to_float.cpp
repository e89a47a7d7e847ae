#include "minidl/data/transforms/to_float.h"

#include <cstdint>

#include "minidl/core/error.h"
#include "minidl/data/transforms/augmentation_math.h"

namespace minidl::data {

ImageSpec ToFloat::output_spec(const ImageSpec& input) const {
  MINIDL_CHECK(input.dtype == kUInt8, "ToFloat: expected uint8 images, got ", input);
  ImageSpec output = input;
  output.dtype = kFloat32;
  return output;
}

void ToFloat::apply(const SampleKey& /*sample*/, const ImageSpec& input_spec, const void* input,
                    void* output) const {
  const auto* in = static_cast<const uint8_t*>(input);
  auto* out = static_cast<float*>(output);
  const int64_t numel = input_spec.numel();
  for (int64_t i = 0; i < numel; ++i) out[i] = pixel_to_float(in[i]);
}

}  // namespace minidl::data
