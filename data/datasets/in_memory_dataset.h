#pragma once
// A dataset held in memory as two tensors: images [N, C, H, W] (uint8 as the readers produce
// them, or any other dtype) and labels int64 [N], both on the CPU. The readers (read_mnist,
// read_fashion_mnist, read_cifar10) and make_synthetic_dataset return one.
#include <cstddef>
#include <cstdint>

#include "minidl/core/tensor.h"
#include "minidl/data/datasets/dataset.h"

namespace minidl::data {

class InMemoryDataset final : public Dataset {
 public:
  // Checks shapes, devices and that every label is in [0, num_classes); makes both tensors
  // contiguous (copying only when they are not).
  InMemoryDataset(Tensor images, Tensor labels, int64_t num_classes);

  int64_t size() const override { return images_.size(0); }
  ImageSpec image_spec() const override { return spec_; }
  int64_t read(int64_t index, int64_t epoch, void* image) const override;

  const Tensor& images() const { return images_; }  // [N, C, H, W]
  const Tensor& labels() const { return labels_; }  // int64 [N]
  int64_t num_classes() const { return num_classes_; }

 private:
  Tensor images_;
  Tensor labels_;
  int64_t num_classes_;
  ImageSpec spec_;
  // Raw views of the two tensors for read(), which runs once per sample on the hot path.
  const std::byte* image_bytes_ = nullptr;
  const int64_t* label_values_ = nullptr;
};

}  // namespace minidl::data
