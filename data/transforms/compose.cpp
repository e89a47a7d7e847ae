#include "minidl/data/transforms/compose.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "minidl/core/error.h"

namespace minidl::data {

Compose::Compose(std::vector<std::shared_ptr<const Transform>> transforms)
    : transforms_(std::move(transforms)) {
  for (size_t i = 0; i < transforms_.size(); ++i)
    MINIDL_CHECK(transforms_[i] != nullptr, "Compose: transform ", i, " is null");
}

ImageSpec Compose::output_spec(const ImageSpec& input) const {
  ImageSpec spec = input;
  for (const auto& transform : transforms_) spec = transform->output_spec(spec);
  return spec;
}

void Compose::apply(const SampleKey& sample, const ImageSpec& input_spec, const void* input,
                    void* output) const {
  if (transforms_.empty()) {
    std::memcpy(output, input, input_spec.nbytes());
    return;
  }
  // Intermediate images live in one scratch allocation per call, two buffers used in turn.
  // max_align_t keeps float images aligned.
  std::vector<ImageSpec> specs{input_spec};
  size_t largest = 0;
  for (size_t i = 0; i + 1 < transforms_.size(); ++i) {
    specs.push_back(transforms_[i]->output_spec(specs.back()));
    largest = std::max(largest, specs.back().nbytes());
  }
  const size_t slot = (largest + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t);
  std::vector<std::max_align_t> scratch(2 * slot);
  const void* from = input;
  for (size_t i = 0; i < transforms_.size(); ++i) {
    void* to = i + 1 == transforms_.size() ? output : static_cast<void*>(&scratch[(i % 2) * slot]);
    transforms_[i]->apply(sample, specs[i], from, to);
    from = to;
  }
}

bool Compose::is_random() const {
  for (const auto& transform : transforms_)
    if (transform->is_random()) return true;
  return false;
}

std::string Compose::name() const {
  std::string result = "Compose(";
  for (size_t i = 0; i < transforms_.size(); ++i)
    result += (i ? ", " : "") + transforms_[i]->name();
  return result + ")";
}

}  // namespace minidl::data
