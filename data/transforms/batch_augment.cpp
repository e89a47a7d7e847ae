#include "minidl/data/transforms/batch_augment.h"

#include "minidl/core/dispatch.h"
#include "minidl/core/error.h"
#include "minidl/data/transforms/batch_augment_kernels.h"

namespace minidl::data {

AugmentOptions& AugmentOptions::random_crop(int64_t padding) {
  MINIDL_CHECK(padding >= 0, "AugmentOptions::random_crop: padding must be non-negative, got ",
               padding);
  crop_padding_ = padding;
  crop_size_.reset();
  return *this;
}

AugmentOptions& AugmentOptions::random_crop(Size2 size, int64_t padding) {
  MINIDL_CHECK(size.h > 0 && size.w > 0, "AugmentOptions::random_crop: size must be positive, ",
               "got ", size.h, "x", size.w);
  random_crop(padding);
  crop_size_ = size;
  return *this;
}

AugmentOptions& AugmentOptions::horizontal_flip(double probability) {
  MINIDL_CHECK(probability >= 0 && probability <= 1,
               "AugmentOptions::horizontal_flip: probability must be in [0, 1], got ", probability);
  flip_probability_ = probability;
  return *this;
}

AugmentOptions& AugmentOptions::normalize(std::vector<float> mean, std::vector<float> std) {
  MINIDL_CHECK(!mean.empty() && mean.size() == std.size(),
               "AugmentOptions::normalize: expected as many means as stds (one per channel, or ",
               "one for all), got ", mean.size(), " means and ", std.size(), " stds");
  for (size_t c = 0; c < std.size(); ++c)
    MINIDL_CHECK(std[c] > 0, "AugmentOptions::normalize: std must be positive, got ", std[c],
                 " for channel ", c);
  mean_ = std::move(mean);
  std_ = std::move(std);
  return *this;
}

namespace {

BatchAugmentParams make_params(const Tensor& images, int64_t epoch, const AugmentOptions& options) {
  BatchAugmentParams params;
  params.seed = options.seed();
  params.epoch = epoch;
  params.batch = images.size(0);
  params.channels = images.size(1);
  params.in_h = params.out_h = images.size(2);
  params.in_w = params.out_w = images.size(3);
  if (options.crops()) {
    params.crop = true;
    params.padding = options.crop_padding();
    if (options.crop_size()) {
      params.out_h = options.crop_size()->h;
      params.out_w = options.crop_size()->w;
    }
    MINIDL_CHECK(params.out_h <= params.in_h + 2 * params.padding &&
                     params.out_w <= params.in_w + 2 * params.padding,
                 "augment_batch: a ", params.out_h, "x", params.out_w, " crop does not fit in ",
                 params.in_h, "x", params.in_w, " images padded by ", params.padding);
  }
  params.flip_probability = static_cast<float>(options.flip_probability());
  if (options.normalizes()) {
    const auto count = static_cast<int64_t>(options.mean().size());
    MINIDL_CHECK(count == 1 || count == params.channels, "augment_batch: ", count,
                 " means and stds for images with ", params.channels, " channels");
    MINIDL_CHECK(params.channels <= kMaxNormalizeChannels, "augment_batch: normalises at most ",
                 kMaxNormalizeChannels, " channels, got ", params.channels);
    params.normalize = true;
    for (int64_t c = 0; c < params.channels; ++c) {
      params.mean[c] = options.mean()[count == 1 ? 0 : c];
      params.std[c] = options.std()[count == 1 ? 0 : c];
    }
  }
  return params;
}

}  // namespace

Tensor augment_batch(const Tensor& images, const Tensor& sample_indices, int64_t epoch,
                     const AugmentOptions& options) {
  MINIDL_CHECK(images.defined() && images.dim() == 4,
               "augment_batch: expected images of shape [B, C, H, W], got ",
               images.defined() ? images.sizes() : Shape{});
  MINIDL_CHECK(images.dtype() == kUInt8 || images.dtype() == kFloat32,
               "augment_batch: expected uint8 or float32 images, got ", images.dtype());
  MINIDL_CHECK(sample_indices.defined() && sample_indices.dtype() == kInt64 &&
                   sample_indices.dim() == 1 && sample_indices.size(0) == images.size(0),
               "augment_batch: expected int64 sample indices of shape [", images.size(0),
               "], one per image");
  MINIDL_CHECK(sample_indices.device() == images.device(), "augment_batch: images are on ",
               images.device(), " but the sample indices on ", sample_indices.device());
  const BatchAugmentParams params = make_params(images, epoch, options);
  const DType out_dtype = params.normalize ? kFloat32 : images.dtype();
  Tensor out = empty({params.batch, params.channels, params.out_h, params.out_w},
                     TensorOptions(out_dtype).device(images.device()));
  kernels_for<BatchAugmentKernels>(images.device())
      .augment_batch(out, images.contiguous(), sample_indices.contiguous(), params);
  return out;
}

Tensor random_crop_batch(const Tensor& images, const Tensor& sample_indices, int64_t epoch,
                         Size2 size, int64_t padding, uint64_t seed) {
  return augment_batch(images, sample_indices, epoch,
                       AugmentOptions().random_crop(size, padding).seed(seed));
}

Tensor random_horizontal_flip_batch(const Tensor& images, const Tensor& sample_indices,
                                    int64_t epoch, double probability, uint64_t seed) {
  return augment_batch(images, sample_indices, epoch,
                       AugmentOptions().horizontal_flip(probability).seed(seed));
}

Tensor normalize_batch(const Tensor& images, const std::vector<float>& mean,
                       const std::vector<float>& std) {
  MINIDL_CHECK(images.defined() && images.dim() == 4,
               "normalize_batch: expected images of shape [B, C, H, W]");
  // Normalisation draws nothing, so any indices do; they only have to be on the device.
  const Tensor unused_indices =
      zeros({images.size(0)}, TensorOptions(kInt64).device(images.device()));
  return augment_batch(images, unused_indices, 0, AugmentOptions().normalize(mean, std));
}

}  // namespace minidl::data
