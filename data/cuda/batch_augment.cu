// The CUDA kernel of augment_batch: one block per sample, its threads striding over the
// sample's output pixels. Every thread draws the sample's crop and flip itself (two Philox
// evaluations), which costs less than sharing them through shared memory and a barrier.
#include <cuda_runtime.h>

#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device.h"
#include "minidl/core/cuda/launch_geometry.h"
#include "minidl/core/cuda/stream.h"
#include "minidl/data/transforms/batch_augment_kernels.h"

namespace minidl::cuda {

namespace {

// out [batch, channels, out_h, out_w]; images [batch, channels, in_h, in_w];
// sample_indices [batch]. Block b computes sample b.
template <class Out, class In>
__global__ void augment_batch_cuda(Out* out, const In* images, const int64_t* sample_indices,
                                   data::BatchAugmentParams params) {
  const int64_t b = blockIdx.x;
  const data::SampleAugmentation draws = data::draw_sample_augmentation(params, sample_indices[b]);
  const int64_t out_plane = params.out_h * params.out_w;
  const int64_t out_numel = params.channels * out_plane;
  const In* image = images + b * params.channels * params.in_h * params.in_w;
  Out* result = out + b * out_numel;
  for (int64_t p = threadIdx.x; p < out_numel; p += blockDim.x) {
    const int64_t c = p / out_plane, within = p % out_plane;
    result[p] = data::augmented_pixel<Out>(params, draws, image, c, within / params.out_w,
                                           within % params.out_w);
  }
}

template <class Out, class In>
void launch(const Tensor& out, const Tensor& images, const Tensor& sample_indices,
            const data::BatchAugmentParams& params) {
  const int device = out.device().index;
  DeviceGuard device_guard(device);
  const StreamHandle stream = current_stream_handle(device);
  augment_batch_cuda<Out, In>
      <<<static_cast<unsigned int>(params.batch), kThreadsPerBlock, 0, stream>>>(
          static_cast<Out*>(out.data_ptr()), static_cast<const In*>(images.data_ptr()),
          sample_indices.data_ptr<int64_t>(), params);
  MINIDL_LAUNCH_CHECK();
}

void augment_batch_kernel(const Tensor& out, const Tensor& images, const Tensor& sample_indices,
                          const data::BatchAugmentParams& params) {
  if (params.batch == 0) return;
  if (images.dtype() == kFloat32) return launch<float, float>(out, images, sample_indices, params);
  if (out.dtype() == kFloat32) return launch<float, uint8_t>(out, images, sample_indices, params);
  launch<uint8_t, uint8_t>(out, images, sample_indices, params);
}

}  // namespace

}  // namespace minidl::cuda

namespace minidl::data {

const BatchAugmentKernels BatchAugmentKernels::kCuda{
    .augment_batch = cuda::augment_batch_kernel,
};

}  // namespace minidl::data
