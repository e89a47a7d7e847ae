#include "minidl/data/datasets/in_memory_dataset.h"

#include <cstring>

#include "minidl/core/error.h"

namespace minidl::data {

InMemoryDataset::InMemoryDataset(Tensor images, Tensor labels, int64_t num_classes)
    : num_classes_(num_classes) {
  MINIDL_CHECK(images.defined() && labels.defined(),
               "InMemoryDataset: expected defined images and labels tensors");
  MINIDL_CHECK(images.dim() == 4, "InMemoryDataset: expected images of shape [N, C, H, W], got ",
               images.sizes());
  MINIDL_CHECK(labels.dim() == 1 && labels.dtype() == kInt64,
               "InMemoryDataset: expected int64 labels of shape [N], got ", labels.dtype(), " ",
               labels.sizes());
  MINIDL_CHECK(images.is_cpu() && labels.is_cpu(),
               "InMemoryDataset: expected CPU tensors, got images on ", images.device(),
               " and labels on ", labels.device());
  MINIDL_CHECK(images.size(0) == labels.size(0), "InMemoryDataset: ", images.size(0),
               " images but ", labels.size(0), " labels");
  MINIDL_CHECK(num_classes > 0, "InMemoryDataset: num_classes must be positive, got ", num_classes);
  images_ = images.contiguous();
  labels_ = labels.contiguous();
  spec_ = {images_.size(1), images_.size(2), images_.size(3), images_.dtype()};
  image_bytes_ = static_cast<const std::byte*>(images_.data_ptr());
  label_values_ = labels_.data_ptr<int64_t>();
  for (int64_t i = 0; i < labels_.numel(); ++i)
    MINIDL_CHECK(label_values_[i] >= 0 && label_values_[i] < num_classes, "InMemoryDataset: label ",
                 label_values_[i], " of sample ", i, " is outside [0, ", num_classes, ")");
}

int64_t InMemoryDataset::read(int64_t index, int64_t /*epoch*/, void* image) const {
  const size_t nbytes = spec_.nbytes();
  std::memcpy(image, image_bytes_ + static_cast<size_t>(index) * nbytes, nbytes);
  return label_values_[index];
}

}  // namespace minidl::data
