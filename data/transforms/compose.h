#pragma once
// Several transforms applied one after the other, as one transform.
#include <memory>
#include <vector>

#include "minidl/data/transforms/transform.h"

namespace minidl::data {

class Compose final : public Transform {
 public:
  explicit Compose(std::vector<std::shared_ptr<const Transform>> transforms);

  ImageSpec output_spec(const ImageSpec& input) const override;
  void apply(const SampleKey& sample, const ImageSpec& input_spec, const void* input,
             void* output) const override;
  bool is_random() const override;
  std::string name() const override;  // "Compose(RandomCrop(...), ToFloat)"

  const std::vector<std::shared_ptr<const Transform>>& transforms() const { return transforms_; }

 private:
  std::vector<std::shared_ptr<const Transform>> transforms_;
};

}  // namespace minidl::data
