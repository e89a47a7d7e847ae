#pragma once
// A tensor kept for backward. It holds a detached alias (so saving an op's own output makes no
// reference cycle) and the storage version at save time: if the tensor is changed in place
// before backward, get() raises an error instead of computing a wrong gradient.
#include <cstdint>
#include <string>

#include "minidl/core/tensor.h"

namespace minidl::autograd {

class SavedTensor {
 public:
  SavedTensor() = default;
  SavedTensor(const Tensor& tensor, std::string op);
  const Tensor& get() const;
  bool defined() const { return tensor_.defined(); }

 private:
  Tensor tensor_;
  uint64_t saved_version_ = 0;
  std::string op_;
};

}  // namespace minidl::autograd
