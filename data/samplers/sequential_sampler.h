#pragma once
// 0, 1, ..., size - 1 in every epoch.
#include "minidl/data/samplers/sampler.h"

namespace minidl::data {

class SequentialSampler final : public Sampler {
 public:
  explicit SequentialSampler(int64_t size);
  std::vector<int64_t> indices(int64_t epoch) const override;
  int64_t size() const override { return size_; }

 private:
  int64_t size_;
};

}  // namespace minidl::data
