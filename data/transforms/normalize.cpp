#include "minidl/data/transforms/normalize.h"

#include <cstdint>

#include "minidl/core/error.h"
#include "minidl/data/transforms/augmentation_math.h"

namespace minidl::data {

Normalize::Normalize(std::vector<float> mean, std::vector<float> std)
    : mean_(std::move(mean)), std_(std::move(std)) {
  MINIDL_CHECK(!mean_.empty() && mean_.size() == std_.size(),
               "Normalize: expected as many means as stds (one per channel, or one for all), got ",
               mean_.size(), " means and ", std_.size(), " stds");
  for (size_t c = 0; c < std_.size(); ++c)
    MINIDL_CHECK(std_[c] > 0, "Normalize: std must be positive, got ", std_[c], " for channel ", c);
}

ImageSpec Normalize::output_spec(const ImageSpec& input) const {
  MINIDL_CHECK(input.dtype == kFloat32, "Normalize: expected float32 images (put ToFloat first ",
               "for uint8 ones), got ", input);
  MINIDL_CHECK(mean_.size() == 1 || static_cast<int64_t>(mean_.size()) == input.channels,
               "Normalize: has ", mean_.size(), " means and stds, but the images have ",
               input.channels, " channels");
  return input;
}

void Normalize::apply(const SampleKey& /*sample*/, const ImageSpec& input_spec, const void* input,
                      void* output) const {
  const auto* in = static_cast<const float*>(input);
  auto* out = static_cast<float*>(output);
  const int64_t plane = input_spec.height * input_spec.width;
  for (int64_t c = 0; c < input_spec.channels; ++c) {
    const size_t k = mean_.size() == 1 ? 0 : static_cast<size_t>(c);
    const float mean = mean_[k], std = std_[k];
    for (int64_t i = c * plane; i < (c + 1) * plane; ++i)
      out[i] = normalize_pixel(in[i], mean, std);
  }
}

std::string Normalize::name() const {
  std::string result = "Normalize(mean=[";
  for (size_t c = 0; c < mean_.size(); ++c) result += (c ? ", " : "") + std::to_string(mean_[c]);
  result += "], std=[";
  for (size_t c = 0; c < std_.size(); ++c) result += (c ? ", " : "") + std::to_string(std_[c]);
  return result + "])";
}

}  // namespace minidl::data
