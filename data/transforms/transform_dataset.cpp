#include "minidl/data/transforms/transform_dataset.h"

#include <cstddef>
#include <vector>

#include "minidl/core/error.h"

namespace minidl::data {

TransformDataset::TransformDataset(std::shared_ptr<const Dataset> base,
                                   std::shared_ptr<const Transform> transform)
    : base_(std::move(base)), transform_(std::move(transform)) {
  MINIDL_CHECK(base_ != nullptr && transform_ != nullptr,
               "TransformDataset: expected a dataset and a transform, got a null pointer");
  input_spec_ = base_->image_spec();
  output_spec_ = transform_->output_spec(input_spec_);
}

int64_t TransformDataset::read(int64_t index, int64_t epoch, void* image) const {
  // The base image goes to scratch memory (max_align_t keeps any dtype aligned).
  std::vector<std::max_align_t> source((input_spec_.nbytes() + sizeof(std::max_align_t) - 1) /
                                       sizeof(std::max_align_t));
  const int64_t label = base_->read(index, epoch, source.data());
  transform_->apply(SampleKey{index, epoch}, input_spec_, source.data(), image);
  return label;
}

bool TransformDataset::varies_with_epoch() const {
  return transform_->is_random() || base_->varies_with_epoch();
}

}  // namespace minidl::data
