#pragma once
// A dataset whose images are another dataset's, transformed (the labels pass through):
//
//   auto train = std::make_shared<TransformDataset>(read_cifar10(Split::Train),
//       std::make_shared<Compose>(std::vector<std::shared_ptr<const Transform>>{
//           std::make_shared<RandomCrop>(32, 4, seed),
//           std::make_shared<RandomHorizontalFlip>(0.5, seed),
//           std::make_shared<ToFloat>(),
//           std::make_shared<Normalize>(mean, std)}));
#include <memory>

#include "minidl/data/datasets/dataset.h"
#include "minidl/data/transforms/transform.h"

namespace minidl::data {

class TransformDataset final : public Dataset {
 public:
  // Checks at once that `transform` accepts the base dataset's images.
  TransformDataset(std::shared_ptr<const Dataset> base, std::shared_ptr<const Transform> transform);

  int64_t size() const override { return base_->size(); }
  ImageSpec image_spec() const override { return output_spec_; }
  int64_t read(int64_t index, int64_t epoch, void* image) const override;
  bool varies_with_epoch() const override;

  const Dataset& base() const { return *base_; }
  const Transform& transform() const { return *transform_; }

 private:
  std::shared_ptr<const Dataset> base_;
  std::shared_ptr<const Transform> transform_;
  ImageSpec input_spec_;
  ImageSpec output_spec_;
};

}  // namespace minidl::data
