#pragma once
// (x - mean[c]) / std[c] per channel, on float32 images (put ToFloat first for uint8 ones).
// One mean and std may stand for every channel.
#include <vector>

#include "minidl/data/transforms/transform.h"

namespace minidl::data {

class Normalize final : public Transform {
 public:
  // Checks that both lists have the same length (at least 1) and every std is positive.
  Normalize(std::vector<float> mean, std::vector<float> std);

  ImageSpec output_spec(const ImageSpec& input) const override;
  void apply(const SampleKey& sample, const ImageSpec& input_spec, const void* input,
             void* output) const override;
  std::string name() const override;

  const std::vector<float>& mean() const { return mean_; }
  const std::vector<float>& std() const { return std_; }

 private:
  std::vector<float> mean_;
  std::vector<float> std_;
};

}  // namespace minidl::data
