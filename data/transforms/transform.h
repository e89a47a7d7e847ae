#pragma once
// A per-sample image transform. TransformDataset applies a chain of them to a dataset's images;
// Compose chains several into one. A transform works on raw contiguous [C, H, W] buffers, so a
// chain costs no tensor allocations per sample.
//
// Random transforms draw from (seed, epoch, index) only (Note [Randomness of samples] in
// data/sample_random.h): the same sample in the same epoch is transformed the same way on any
// worker thread, which is what makes a DataLoader's batches independent of its worker count.
#include <cstdint>
#include <string>

#include "minidl/data/datasets/image_spec.h"

namespace minidl::data {

// Which sample an image is, for the random draws.
struct SampleKey {
  int64_t index = 0;
  int64_t epoch = 0;
};

class Transform {
 public:
  virtual ~Transform() = default;

  // The spec of the output for an input of spec `input`; throws minidl::Error, naming the
  // transform and what it expected, when it cannot take such an input.
  virtual ImageSpec output_spec(const ImageSpec& input) const = 0;
  // Writes the transformed image. `input` has spec `input_spec` (already accepted by
  // output_spec); `output` has output_spec(input_spec) and does not overlap `input`.
  // Thread-safe: workers call it at once.
  virtual void apply(const SampleKey& sample, const ImageSpec& input_spec, const void* input,
                     void* output) const = 0;
  // True when the result depends on the sample key (a random transform).
  virtual bool is_random() const { return false; }
  // For error messages and logs, e.g. "RandomCrop(32, padding=4)".
  virtual std::string name() const = 0;
};

}  // namespace minidl::data
