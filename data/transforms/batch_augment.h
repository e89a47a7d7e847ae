#pragma once
// Random crop, horizontal flip and normalisation of a whole batch in one pass, on the CPU or on
// a CUDA device (where the batch lives), as the GPU path of the DataLoader runs them. The
// results equal, bit for bit, those of the per-sample transforms RandomCrop, then
// RandomHorizontalFlip, then ToFloat and Normalize, given the same seed: both draw from
// (seed, epoch, sample index) (data/transforms/augmentation_math.h), which is why each call takes
// the dataset index of every sample rather than its position in the batch.
//
//   images          [B, C, H, W], uint8 or float32
//   sample_indices  int64 [B] on the same device: the dataset index of each image
//   result          [B, C, out_h, out_w]; float32 when normalising (uint8 is scaled to [0, 1]
//                   first), else the input dtype
// On CUDA the work is queued on the current stream; nothing waits for the device.
#include <cstdint>
#include <optional>
#include <vector>

#include "minidl/core/arg.h"
#include "minidl/core/tensor.h"

namespace minidl::data {

class AugmentOptions {
 public:
  // Pad by `padding` zeros on every side, then cut a window of the input's own size (the usual
  // CIFAR augmentation: random_crop(4) on 32x32 images).
  AugmentOptions& random_crop(int64_t padding);
  // Pad by `padding`, then cut a `size` window.
  AugmentOptions& random_crop(Size2 size, int64_t padding);
  AugmentOptions& horizontal_flip(double probability = 0.5);
  // One mean and std per channel, or one for all channels.
  AugmentOptions& normalize(std::vector<float> mean, std::vector<float> std);

  bool crops() const { return crop_padding_.has_value(); }
  int64_t crop_padding() const { return crop_padding_.value_or(0); }
  const std::optional<Size2>& crop_size() const { return crop_size_; }  // nullopt: input size
  double flip_probability() const { return flip_probability_; }
  bool normalizes() const { return !mean_.empty(); }
  const std::vector<float>& mean() const { return mean_; }
  const std::vector<float>& std() const { return std_; }
  bool does_anything() const { return crops() || flip_probability_ > 0 || normalizes(); }

  MINIDL_ARG(uint64_t, seed) = 0;

 private:
  std::optional<int64_t> crop_padding_;
  std::optional<Size2> crop_size_;
  double flip_probability_ = 0;
  std::vector<float> mean_;
  std::vector<float> std_;
};

Tensor augment_batch(const Tensor& images, const Tensor& sample_indices, int64_t epoch,
                     const AugmentOptions& options);

// The three parts alone.
Tensor random_crop_batch(const Tensor& images, const Tensor& sample_indices, int64_t epoch,
                         Size2 size, int64_t padding, uint64_t seed);
Tensor random_horizontal_flip_batch(const Tensor& images, const Tensor& sample_indices,
                                    int64_t epoch, double probability, uint64_t seed);
Tensor normalize_batch(const Tensor& images, const std::vector<float>& mean,
                       const std::vector<float>& std);

}  // namespace minidl::data
