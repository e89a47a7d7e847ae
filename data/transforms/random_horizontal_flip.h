#pragma once
// Mirrors the image left to right with probability p (torchvision's RandomHorizontalFlip).
// Works on any dtype. Whether sample i is mirrored in epoch e depends only on (seed, e, i).
#include <cstdint>

#include "minidl/data/transforms/transform.h"

namespace minidl::data {

class RandomHorizontalFlip final : public Transform {
 public:
  explicit RandomHorizontalFlip(double probability = 0.5, uint64_t seed = 0);

  ImageSpec output_spec(const ImageSpec& input) const override { return input; }
  void apply(const SampleKey& sample, const ImageSpec& input_spec, const void* input,
             void* output) const override;
  bool is_random() const override { return true; }
  std::string name() const override;

  double probability() const { return probability_; }
  uint64_t seed() const { return seed_; }

 private:
  double probability_;
  uint64_t seed_;
};

}  // namespace minidl::data
