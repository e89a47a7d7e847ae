#include "minidl/core/autograd/saved_tensor.h"

#include "minidl/core/error.h"

namespace minidl::autograd {

SavedTensor::SavedTensor(const Tensor& tensor, std::string op)
    : tensor_(tensor.defined() ? tensor.detach() : Tensor()),
      saved_version_(tensor.defined() ? tensor.version() : 0),
      op_(std::move(op)) {}

const Tensor& SavedTensor::get() const {
  MINIDL_CHECK(!tensor_.defined() || tensor_.version() == saved_version_, op_,
               " backward: a tensor of shape ", tensor_.sizes(),
               " saved for the gradient was modified by an in-place operation (it is at version ",
               tensor_.version(), ", expected version ", saved_version_, ")");
  return tensor_;
}

}  // namespace minidl::autograd
