#include "minidl/nn/modules/sequential.h"

#include <ostream>

namespace minidl::nn {

SequentialImpl::SequentialImpl(std::initializer_list<AnyModule> modules) {
  for (const AnyModule& module : modules) push_back(module);
}

void SequentialImpl::push_back(AnyModule module) {
  push_back(std::to_string(elements_.size()), std::move(module));
}

void SequentialImpl::push_back(std::string name, AnyModule module) {
  register_module(std::move(name), module.ptr());
  elements_.push_back(std::move(module));
}

Tensor SequentialImpl::forward(const Tensor& x) {
  Tensor output = x;
  for (const AnyModule& element : elements_) output = element.forward(output);
  return output;
}

std::shared_ptr<Module> SequentialImpl::ptr(size_t index) const {
  MINIDL_CHECK(index < elements_.size(), "Sequential: index ", index, " is out of range for ",
               elements_.size(), " element(s)");
  return elements_[index].ptr();
}

void SequentialImpl::pretty_print(std::ostream& out) const { out << "Sequential"; }

}  // namespace minidl::nn
