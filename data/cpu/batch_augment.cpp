// The CPU loop of augment_batch (data/transforms/batch_augment_kernels.h): samples split over
// minidl's CPU threads, each sample's output written in memory order.
#include "minidl/core/parallel.h"
#include "minidl/data/transforms/batch_augment_kernels.h"

namespace minidl::cpu {

namespace {

// Samples per parallel chunk: one CIFAR image is about 3,000 pixels.
constexpr int64_t kSamplesPerChunk = 8;

template <class Out, class In>
void augment_samples(Out* out, const In* images, const int64_t* sample_indices,
                     const data::BatchAugmentParams& params) {
  const int64_t in_numel = params.channels * params.in_h * params.in_w;
  const int64_t out_numel = params.channels * params.out_h * params.out_w;
  parallel_for(0, params.batch, kSamplesPerChunk, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const data::SampleAugmentation draws =
          data::draw_sample_augmentation(params, sample_indices[b]);
      const In* image = images + b * in_numel;
      Out* result = out + b * out_numel;
      for (int64_t c = 0; c < params.channels; ++c)
        for (int64_t y = 0; y < params.out_h; ++y)
          for (int64_t x = 0; x < params.out_w; ++x)
            *result++ = data::augmented_pixel<Out>(params, draws, image, c, y, x);
    }
  });
}

void augment_batch_kernel(const Tensor& out, const Tensor& images, const Tensor& sample_indices,
                          const data::BatchAugmentParams& params) {
  const int64_t* indices = sample_indices.data_ptr<int64_t>();
  if (images.dtype() == kFloat32)
    return augment_samples(out.data_ptr<float>(), images.data_ptr<float>(), indices, params);
  if (out.dtype() == kFloat32)
    return augment_samples(out.data_ptr<float>(), images.data_ptr<uint8_t>(), indices, params);
  augment_samples(out.data_ptr<uint8_t>(), images.data_ptr<uint8_t>(), indices, params);
}

}  // namespace

}  // namespace minidl::cpu

namespace minidl::data {

const BatchAugmentKernels BatchAugmentKernels::kCpu{
    .augment_batch = cpu::augment_batch_kernel,
};

}  // namespace minidl::data
