#pragma once
// A tensor kept for backward. It holds a detached alias and the storage version at save time:
// if the tensor is changed in place before backward, get() raises an error instead of computing
// a wrong gradient.
//
// With grad mode on (a backward pass with create_graph), get() gives a tensor that carries the
// saved tensor's place in the graph, so that a gradient computed from it is differentiable in
// it too: a saved input that requires grad is given back as itself; the op's own saved output
// (exp, tanh, softmax, ... keep theirs) is rebuilt as a view whose grad_fn is the node now
// running its backward, which is that output's grad_fn. Holding the output itself would be a
// reference cycle (output -> node -> closure -> output); PyTorch's SavedVariable keeps a weak
// reference to the node for the same reason. With grad mode off get() gives the detached alias.
#include <cstdint>
#include <string>

#include "minidl/core/tensor.h"

namespace minidl::autograd {

class SavedTensor {
 public:
  // What the saved tensor is to the op that saves it.
  enum class Role { kInput, kOutput };

  SavedTensor() = default;
  SavedTensor(const Tensor& tensor, std::string op, Role role = Role::kInput);
  // The op's own output, which it saves for its backward (before recording it).
  static SavedTensor output(const Tensor& tensor, std::string op) {
    return SavedTensor(tensor, std::move(op), Role::kOutput);
  }
  Tensor get() const;
  bool defined() const { return tensor_.defined(); }

 private:
  Tensor tensor_;    // detached alias
  Tensor original_;  // a saved input that requires grad, as given (its graph identity)
  bool is_output_ = false;
  uint64_t saved_version_ = 0;
  std::string op_;
};

}  // namespace minidl::autograd
