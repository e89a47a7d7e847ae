#pragma once
// The dataset interface: a fixed number of images of one ImageSpec, each with a class label.
//
// Datasets compose: a TransformDataset wraps another dataset and transforms its images, and the
// DataLoader batches, shuffles and prefetches any of them. Samples are addressed by index and
// epoch, never by call order, so the same (index, epoch) gives the same sample on any worker
// thread (random transforms draw from (seed, epoch, index); see data/sample_random.h).
#include <cstdint>

#include "minidl/data/datasets/example.h"
#include "minidl/data/datasets/image_spec.h"

namespace minidl::data {

class Dataset {
 public:
  virtual ~Dataset() = default;

  virtual int64_t size() const = 0;
  // The shape and dtype of every image.
  virtual ImageSpec image_spec() const = 0;
  // Writes the image of sample `index` (0 <= index < size(), checked by the caller) in epoch
  // `epoch` to `image` (image_spec().nbytes() bytes, suitably aligned for its dtype) and
  // returns its label. The loader's workers call this from several threads at once, so it must
  // be thread-safe; it runs on the hot path, so it should not allocate when it can avoid it.
  virtual int64_t read(int64_t index, int64_t epoch, void* image) const = 0;
  // True when a sample's image depends on the epoch (random transforms). The DataLoader's
  // device-resident mode reads every sample once, so it refuses such datasets.
  virtual bool varies_with_epoch() const { return false; }

  // Sample `index` of epoch `epoch` as a new [C, H, W] tensor; checks the index.
  Example get(int64_t index, int64_t epoch = 0) const;
};

}  // namespace minidl::data
